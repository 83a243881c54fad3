package normalize_test

import (
	"bufio"
	"compress/bzip2"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
)

// uax15 is a plain UAX #15 NFC written from the Unicode Character
// Database alone (UnicodeData.txt and CompositionExclusions.txt of the
// pinned version), sharing nothing with the package or with
// golang.org/x/text: the full canonical decomposition, the canonical
// ordering algorithm as the standard states it (swap adjacent non-starters
// until their classes do not decrease), and the canonical composition
// algorithm, quadratic, with Hangul done arithmetically. It never inserts
// U+034F, whatever the length of a run of non-starters.
type uax15 struct {
	ccc    map[rune]uint8
	decomp map[rune][]rune  // canonical decomposition mappings, one level
	comp   map[[2]rune]rune // primary composites
	marks  map[uint8][]rune // the code points of each non-zero class
	tested []rune           // every code point with a non-zero class or a canonical decomposition
	names  map[rune]string  // for messages
}

const (
	sBase, lBase, vBase, tBase = 0xAC00, 0x1100, 0x1161, 0x11A7
	lCount, vCount, tCount     = 19, 21, 28
	sCount                     = lCount * vCount * tCount
)

// loadUAX15 reads the database (SYNCFILTER_UCD or /usr/share/unicode),
// skipping the test when it is not installed unless
// SYNCFILTER_REQUIRE_UCD is set (make test).
func loadUAX15(t *testing.T) *uax15 {
	t.Helper()
	dir := os.Getenv("SYNCFILTER_UCD")
	if dir == "" {
		dir = "/usr/share/unicode"
	}
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			if os.Getenv("SYNCFILTER_REQUIRE_UCD") != "" {
				t.Fatalf("%v (Debian: apt-get install unicode-data)", err)
			}
			t.Skipf("%v (Debian: apt-get install unicode-data)", err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	hex := func(s string) rune {
		v, err := strconv.ParseUint(s, 16, 32)
		if err != nil {
			t.Fatalf("bad code point %q: %v", s, err)
		}
		return rune(v)
	}
	u := &uax15{
		ccc:    map[rune]uint8{},
		decomp: map[rune][]rune{},
		comp:   map[[2]rune]rune{},
		marks:  map[uint8][]rune{},
		names:  map[rune]string{},
	}
	excluded := map[rune]bool{}
	sc := bufio.NewScanner(open("CompositionExclusions.txt"))
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first && !strings.Contains(line, "CompositionExclusions-"+normalize.PinnedUnicode+".txt") {
			t.Fatalf("CompositionExclusions.txt is not of Unicode %s: %q", normalize.PinnedUnicode, line)
		}
		if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" {
			excluded[hex(strings.TrimSpace(line))] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sc = bufio.NewScanner(open("UnicodeData.txt"))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ";")
		if len(f) < 6 {
			continue
		}
		r := hex(f[0])
		u.names[r] = f[1]
		c, err := strconv.ParseUint(f[3], 10, 8)
		if err != nil {
			t.Fatalf("U+%04X: class %q", r, f[3])
		}
		if c != 0 {
			u.ccc[r] = uint8(c)
			u.marks[uint8(c)] = append(u.marks[uint8(c)], r)
		}
		if f[5] != "" && f[5][0] != '<' { // canonical, not compatibility
			for _, x := range strings.Fields(f[5]) {
				u.decomp[r] = append(u.decomp[r], hex(x))
			}
		}
		if c != 0 || (f[5] != "" && f[5][0] != '<') {
			u.tested = append(u.tested, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Primary composites: canonical pairs that are not
	// Full_Composition_Exclusion (the explicit exclusions, and
	// decompositions of a non-starter or starting with one).
	for r, d := range u.decomp {
		if len(d) == 2 && !excluded[r] && u.ccc[r] == 0 && u.ccc[d[0]] == 0 {
			u.comp[[2]rune{d[0], d[1]}] = r
		}
	}
	if len(u.comp) != 941 || len(u.tested) < 2900 {
		t.Fatalf("read %d primary composites, %d code points to test", len(u.comp), len(u.tested))
	}
	return u
}

// decompose appends the full canonical decomposition of r.
func (u *uax15) decompose(d []rune, r rune) []rune {
	if x := r - sBase; x >= 0 && x < sCount {
		d = append(d, lBase+x/(vCount*tCount), vBase+x%(vCount*tCount)/tCount)
		if x%tCount != 0 {
			d = append(d, tBase+x%tCount)
		}
		return d
	}
	if m, ok := u.decomp[r]; ok {
		for _, x := range m {
			d = u.decompose(d, x)
		}
		return d
	}
	return append(d, r)
}

// nfd is the full canonical decomposition of s in canonical order.
func (u *uax15) nfd(s string) []rune {
	var d []rune
	for _, r := range s {
		d = u.decompose(d, r)
	}
	// The canonical ordering algorithm: exchange adjacent A B when
	// ccc(A) > ccc(B) > 0, until there is none.
	for swapped := true; swapped; {
		swapped = false
		for i := 1; i < len(d); i++ {
			if a, b := u.ccc[d[i-1]], u.ccc[d[i]]; b > 0 && a > b {
				d[i-1], d[i] = d[i], d[i-1]
				swapped = true
			}
		}
	}
	return d
}

// primary returns the primary composite of a and b, or -1.
func (u *uax15) primary(a, b rune) rune {
	if a >= lBase && a < lBase+lCount && b >= vBase && b < vBase+vCount {
		return sBase + ((a-lBase)*vCount+(b-vBase))*tCount
	}
	if x := a - sBase; x >= 0 && x < sCount && x%tCount == 0 && b > tBase && b < tBase+tCount {
		return a + b - tBase
	}
	if c, ok := u.comp[[2]rune{a, b}]; ok {
		return c
	}
	return -1
}

// nfc is UAX #15's NFC of s: canonical composition of nfd(s). For each
// code point C after the first, L is the last starter before it still
// there; C is blocked from L when a code point between them (still
// there) has class 0 or a class not lower than C's; otherwise, when L C
// has a primary composite, L becomes it and C goes.
func (u *uax15) nfc(s string) string {
	d := u.nfd(s)
	gone := make([]bool, len(d))
	for i := 1; i < len(d); i++ {
		l := -1
		for j := i - 1; j >= 0; j-- {
			if !gone[j] && u.ccc[d[j]] == 0 {
				l = j
				break
			}
		}
		if l < 0 {
			continue
		}
		blocked := false
		for j := l + 1; j < i; j++ {
			if !gone[j] && (u.ccc[d[j]] == 0 || u.ccc[d[j]] >= u.ccc[d[i]]) {
				blocked = true
				break
			}
		}
		if !blocked {
			if x := u.primary(d[l], d[i]); x >= 0 {
				d[l], gone[i] = x, true
			}
		}
	}
	var sb strings.Builder
	for i, r := range d {
		if !gone[i] {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// TestUAX15ReferenceConformance checks the reference itself against the
// NFC column of NormalizationTest.txt, so that agreeing with it means
// something.
func TestUAX15ReferenceConformance(t *testing.T) {
	u := loadUAX15(t)
	dir := os.Getenv("SYNCFILTER_UCD")
	if dir == "" {
		dir = "/usr/share/unicode"
	}
	f, err := os.Open(filepath.Join(dir, "NormalizationTest.txt.bz2"))
	if err != nil {
		t.Fatal(err) // UnicodeData.txt is there, so this is too (unicode-data)
	}
	defer f.Close()
	sc := bufio.NewScanner(bzip2.NewReader(f))
	n := 0
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line == "" || line[0] == '@' {
			continue
		}
		var c [5]string
		for i, field := range strings.SplitN(line, ";", 6)[:5] {
			var sb strings.Builder
			for _, h := range strings.Fields(field) {
				r, err := strconv.ParseUint(h, 16, 32)
				if err != nil {
					t.Fatal(err)
				}
				sb.WriteRune(rune(r))
			}
			c[i] = sb.String()
		}
		for i, want := range []int{1, 1, 1, 3, 3} {
			if got := u.nfc(c[i]); got != c[want] {
				t.Fatalf("reference NFC(c%d %+q) = %+q, want %+q", i+1, c[i], got, c[want])
			}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 19_000 {
		t.Fatalf("only %d test lines", n)
	}
}

// TestLongRunsAreStandardNFC: for every code point r with a non-zero
// class or a canonical decomposition (and every Hangul syllable), c of 40
// copies of r, alone and after "a", is the plain UAX #15 NFC: no U+034F,
// and the run sorted and composed as a whole, not cut at 30 non-starters
// as golang.org/x/text's stream-safe NFC cuts it.
func TestLongRunsAreStandardNFC(t *testing.T) {
	u := loadUAX15(t)
	rs := append([]rune(nil), u.tested...)
	for r := rune(sBase); r < sBase+sCount; r++ {
		rs = append(rs, r)
	}
	bad := 0
	for _, r := range rs {
		for _, prefix := range []string{"", "a"} {
			s := prefix + strings.Repeat(string(r), 40)
			got, err := normalize.String(s)
			want := u.nfc(s)
			if strings.ContainsRune(want, 0x034F) {
				t.Fatalf("reference NFC of 40 x U+%04X has U+034F", r)
			}
			if err != nil || got != want {
				t.Errorf("c(%q + 40 x U+%04X %s) = %+q, %v; UAX #15 NFC %+q", prefix, r, u.names[r], got, err, want)
				if bad++; bad > 10 {
					t.FailNow()
				}
				continue
			}
			if !normalize.IsCanonical(got) || normalize.IsCanonical(s) != (s == got) {
				t.Errorf("IsCanonical wrong for 40 x U+%04X", r)
			}
			if b, err := normalize.Append([]byte("k"), s); err != nil || string(b) != "k"+want {
				t.Errorf("Append(40 x U+%04X) = %+q, %v", r, b, err)
			}
		}
	}
}

// TestLongRunCases spells out what the stream-safe format got wrong.
func TestLongRunCases(t *testing.T) {
	acute, below := "\u0301", "\u0323"
	for _, tc := range []struct{ why, in, want string }{
		{"a and 40 acutes: the first composes, no U+034F",
			"a" + strings.Repeat(acute, 40), "\u00e1" + strings.Repeat(acute, 39)},
		{"a mark of a lower class after 35 acutes still moves first and composes",
			"a" + strings.Repeat(acute, 35) + below, "\u1ea1" + strings.Repeat(acute, 35)},
		{"40 x U+0344 (decomposes to U+0308 U+0301, class 230 each): kept in order",
			strings.Repeat("\u0344", 40), strings.Repeat("\u0308\u0301", 40)},
		{"the same after o: the first diaeresis composes",
			"o" + strings.Repeat("\u0344", 40), "\u00f6\u0301" + strings.Repeat("\u0308\u0301", 39)},
		{"64 marks, then a Hangul L V that compose",
			"e" + strings.Repeat("\u0316", 64) + "\u1100\u1161", "e" + strings.Repeat("\u0316", 64) + "\uac00"},
		{"a U+034F in the input stays where it is",
			"a" + strings.Repeat(acute, 31) + "\u034f" + acute, "\u00e1" + strings.Repeat(acute, 30) + "\u034f" + acute},
	} {
		got, err := normalize.String(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: c(%+q) = %+q, %v; want %+q", tc.why, tc.in, got, err, tc.want)
		}
	}
}

// equivalentSpellings returns s's canonical decomposition (u.nfd) and n
// random canonically equivalent rearrangements of it: each run of
// non-starters shuffled so that only marks of equal class keep their
// order.
func equivalentSpellings(u *uax15, rng *rand.Rand, s string, n int) []string {
	d := u.nfd(s)
	out := []string{s, string(d)}
	for k := 0; k < n; k++ {
		e := append([]rune(nil), d...)
		for i := 0; i < len(e); {
			if u.ccc[e[i]] == 0 {
				i++
				continue
			}
			j := i
			for j < len(e) && u.ccc[e[j]] != 0 {
				j++
			}
			// A random interleaving of the run's classes, each class's
			// marks in their order.
			byClass := map[uint8][]rune{}
			var classes []uint8
			for _, r := range d[i:j] {
				c := u.ccc[r]
				if len(byClass[c]) == 0 {
					classes = append(classes, c)
				}
				byClass[c] = append(byClass[c], r)
			}
			for p := i; p < j; p++ {
				for {
					c := classes[rng.IntN(len(classes))]
					if q := byClass[c]; len(q) > 0 {
						e[p], byClass[c] = q[0], q[1:]
						break
					}
				}
			}
			i = j
		}
		out = append(out, string(e))
	}
	return out
}

// TestEquivalentLongRunsShareOneForm: canonically equivalent keys with
// runs of 60 marks of different classes (precomposed letters and marks
// that decompose to several, decomposed, and shuffled as canonical
// equivalence allows) all normalize to the same bytes, the reference's
// NFC, with no U+034F.
func TestEquivalentLongRunsShareOneForm(t *testing.T) {
	u := loadUAX15(t)
	marks := []rune{0x0300, 0x0301, 0x0308, 0x0316, 0x0323, 0x0327, 0x0328, 0x031b, 0x0334, 0x0345, 0x05b0, 0x05b4, 0x093c, 0x0f71, 0x0f72, 0x0f74, 0x1dce, 0x302a, 0x0344, 0x0f73, 0x0f75, 0x0f81, 0x0340, 0x0341}
	bases := []rune{'a', 'o', 'e', 0x00e9, 0x1ec7, 0x01d5, 0x03b1, 0x1f00, 0x0915, 0x0f40, 0x1100, 0xac00, 0x212b, 0x00c5}
	rng := rand.New(rand.NewPCG(15, 0))
	trials := 400
	if testing.Short() {
		trials = 50
	}
	for trial := 0; trial < trials; trial++ {
		var sb strings.Builder
		for seg := 1 + rng.IntN(3); seg > 0; seg-- {
			sb.WriteRune(bases[rng.IntN(len(bases))])
			for k := 60; k > 0; k-- {
				sb.WriteRune(marks[rng.IntN(len(marks))])
			}
		}
		s := sb.String()
		want := u.nfc(s)
		for _, e := range equivalentSpellings(u, rng, s, 6) {
			got, err := normalize.String(e)
			if err != nil || got != want {
				t.Fatalf("c(%+q) = %+q, %v; its canonically equivalent %+q has UAX #15 NFC %+q", e, got, err, s, want)
			}
			if strings.ContainsRune(got, 0x034F) {
				t.Fatalf("c(%+q) has U+034F", e)
			}
		}
	}
}

// TestNoGraphemeJoinerInserted: on random keys with runs of up to 200
// marks, c is the reference's NFC and has exactly as many U+034F as the
// key.
func TestNoGraphemeJoinerInserted(t *testing.T) {
	u := loadUAX15(t)
	var pool []rune
	for c, rs := range u.marks {
		if c != 0 {
			pool = append(pool, rs[0], rs[len(rs)-1])
		}
	}
	pool = append(pool, 0x0344, 0x0f73, 0x0f75, 0x0f81, 0x1161, 0x11a8, 0x0dcf, 0x0dca, 0x102e)
	bases := []rune{'a', 'e', 'u', 0x00e9, 0x1100, 0xac00, 0x0dd9, 0x1025, 0x0915, 0x10041}
	rng := rand.New(rand.NewPCG(34, 0xf))
	trials := 2000
	if testing.Short() {
		trials = 200
	}
	for trial := 0; trial < trials; trial++ {
		var sb strings.Builder
		cgj := trial%2 == 1
		for seg := 1 + rng.IntN(3); seg > 0; seg-- {
			sb.WriteRune(bases[rng.IntN(len(bases))])
			for k := rng.IntN(200); k > 0; k-- {
				if cgj && rng.IntN(40) == 0 {
					sb.WriteRune(0x034F)
				}
				sb.WriteRune(pool[rng.IntN(len(pool))])
			}
		}
		s := sb.String()
		got, err := normalize.String(s)
		if want := u.nfc(s); err != nil || got != want {
			t.Fatalf("c(%+q) = %+q, %v; UAX #15 NFC %+q", s, got, err, want)
		}
		if n, m := strings.Count(got, "\u034f"), strings.Count(s, "\u034f"); n != m {
			t.Fatalf("c(%+q) has %d U+034F, the key %d", s, n, m)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("c(%+q) is not valid UTF-8", s)
		}
	}
}
