package normalize

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
)

func TestEquivalentsKnown(t *testing.T) {
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"abc", []string{"abc"}},
		{"", []string{""}},
		{"é", []string{"é", "e\u0301", "e\u0341"}}, // U+0341 decomposes to U+0301
		{"K1", []string{"K1", "\u212a1"}},
		{"Å", []string{"Å", "A\u030a", "\u212b"}},
		{"Ω", []string{"Ω", "\u2126"}},
		{"ệ", []string{"ệ", "e\u0323\u0302", "e\u0302\u0323", "ẹ\u0302", "ê\u0323"}},
		{"각", []string{"각", "가\u11a8", "\u1100\u1161\u11a8"}},
		{"a;`", []string{"a;`", "a\u037e`", "a;\u1fef", "a\u037e\u1fef"}},
	} {
		got, ok := Equivalents(c.key, 100)
		if !ok {
			t.Fatalf("Equivalents(%+q) refused", c.key)
		}
		if got[0] != c.key {
			t.Errorf("Equivalents(%+q)[0] = %+q, want the key first", c.key, got[0])
		}
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("Equivalents(%+q) = %+q, want %+q", c.key, got, c.want)
		}
	}
}

func TestEquivalentsRefuses(t *testing.T) {
	if _, ok := Equivalents("e\u0301", 10); ok {
		t.Error("a key not in NFC was walked")
	}
	if _, ok := Equivalents("\xff", 10); ok {
		t.Error("invalid UTF-8 was walked")
	}
	if _, ok := Equivalents("KKKKKKKK", 255); ok { // 256 spellings
		t.Error("more spellings than the limit were returned")
	}
	if got, ok := Equivalents("KKKKKKKK", 256); !ok || len(got) != 256 {
		t.Errorf("8 K: %d spellings, %v; want 256", len(got), ok)
	}
}

// TestEquivalentsBruteForce groups every string of up to three code points
// of an alphabet of characters that decompose, compose, reorder or stand
// for another by their canonical form, and checks that Equivalents of
// each form returns the whole group (complete) and only strings of that
// form (sound).
func TestEquivalentsBruteForce(t *testing.T) {
	alphabet := []rune{
		'a', 'e', 'A', 'K', ';', 0x212a, 0x037e, 0x212b, 0x00c5, 0x030a,
		0x0301, 0x0323, 0x0302, 0x0308, 0x0344, 0x00e9, 0x00ea, 0x1eb9, 0x1ec7, 0x1ebf,
		0x1100, 0x1161, 0x11a8, 0xac00, 0xac01, 0x0915, 0x093c, 0x0958, 0x0f71, 0x0f72, 0x0f73,
	}
	groups := map[string][]string{}
	var walk func(prefix []rune)
	walk = func(prefix []rune) {
		s := string(prefix)
		c, err := String(s)
		if err != nil {
			t.Fatal(err)
		}
		groups[c] = append(groups[c], s)
		if len(prefix) == 3 {
			return
		}
		for _, r := range alphabet {
			walk(append(prefix, r))
		}
	}
	walk(nil)
	for c, group := range groups {
		got, ok := Equivalents(c, 10000)
		if !ok {
			t.Fatalf("Equivalents(%+q) refused", c)
		}
		for _, s := range got {
			if cs, err := String(s); err != nil || cs != c {
				t.Fatalf("Equivalents(%+q) holds %+q, whose form is %+q", c, s, cs)
			}
		}
		for _, s := range group {
			if !slices.Contains(got, s) {
				t.Fatalf("Equivalents(%+q) = %+q lacks %+q", c, got, s)
			}
		}
	}
	if len(groups) < 1000 {
		t.Fatalf("only %d forms walked", len(groups))
	}
}

func BenchmarkEquivalents(b *testing.B) {
	for _, key := range []string{"Zoë Kovač-Øster", "Nguyễn Thị Ánh", "0b7c6f1e-5d4a-4c3b-9a2f-1e0d9c8b7a6f"} {
		b.Run(key, func(b *testing.B) {
			Equivalents(key, 64)
			b.ReportAllocs()
			for b.Loop() {
				Equivalents(key, 64)
			}
		})
	}
}

// TestEquivalentsBounded: a key of a long run of marks is walked in
// bounded time: refused at once when its orderings exceed the limit or it
// is longer than MaxWalkBytes, walked when it has few.
func TestEquivalentsBounded(t *testing.T) {
	same := "a" + strings.Repeat("\u0316", 100)               // one class: one ordering
	mixed := "a" + strings.Repeat("\u0316\u0301", 40)         // two classes: C(80, 40) orderings
	long := "a" + strings.Repeat("\u0316", MaxWalkBytes/2)    // over MaxWalkBytes
	twoClass := "a" + strings.Repeat("\u0316", 30) + "\u0301" // 31 orderings × (U+0301 or U+0341), and á
	for _, c := range []struct {
		key  string
		ok   bool
		want int
	}{{same, true, 1}, {mixed, false, 0}, {long, false, 0}, {twoClass, true, 31*2 + 1}} {
		key, err := String(c.key)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, ok := Equivalents(key, 4096)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%d bytes: %v", len(key), took)
		}
		if ok != c.ok || len(got) != c.want {
			t.Errorf("%d bytes: %d spellings, %v; want %d, %v", len(key), len(got), ok, c.want, c.ok)
		}
	}
}

// TestEquivalentsNewerTables: with tables newer than the pin, a code
// point unassigned in it is kept as it is and the pieces around it are
// walked on their own (run here by treating 15.0.0's tables as newer).
func TestEquivalentsNewerTables(t *testing.T) {
	samePin = false
	defer func() { samePin = norm.Version == PinnedUnicode }()
	const kirat = "\U00016D67" // assigned in Unicode 16.0
	got, ok := Equivalents(kirat+"\u00e9K", 100)
	slices.Sort(got)
	want := []string{kirat + "e\u0301K", kirat + "e\u0301\u212a", kirat + "e\u0341K", kirat + "e\u0341\u212a", kirat + "\u00e9K", kirat + "\u00e9\u212a"}
	slices.Sort(want)
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("Equivalents = %+q, %v; want %+q", got, ok, want)
	}
}

func BenchmarkInverseTable(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		invOnce = sync.Once{}
		inverse()
	}
}
