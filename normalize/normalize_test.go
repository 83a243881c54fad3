package normalize_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/internal/keycorpus"
	"github.com/syncfilter/syncfilter/normalize"
)

func TestCorpusSpellingsShareOneCanonicalForm(t *testing.T) {
	for _, g := range keycorpus.Groups() {
		t.Run(g.Name, func(t *testing.T) {
			for _, s := range g.Spellings {
				got, err := normalize.String(s)
				if err != nil {
					t.Fatalf("String(%+q): %v", s, err)
				}
				if got != g.NFC {
					t.Fatalf("String(%+.40q) = %+.40q, want %+.40q", s, got, g.NFC)
				}
				b, err := normalize.Append([]byte("prefix"), s)
				if err != nil || string(b) != "prefix"+g.NFC {
					t.Fatalf("Append(%+.40q) = %+.40q, %v", s, b, err)
				}
				if normalize.IsCanonical(s) != (s == g.NFC) {
					t.Fatalf("IsCanonical(%+.40q) = %v", s, !(s == g.NFC))
				}
			}
		})
	}
}

func TestInvalidUTF8NamesOffset(t *testing.T) {
	tests := []struct {
		name string
		in   string
		off  int
	}{
		{"lone continuation", "\x80", 0},
		{"truncated two-byte", "ab\xc3", 2},
		{"overlong slash", "a\xc0\xafb", 1},
		{"surrogate half", "ok\xed\xa0\x80", 2},
		{"beyond U+10FFFF", "\xf4\x90\x80\x80", 0},
		{"after valid non-ascii", "\u00e9\u4e2d\xff", 5},
		{"in long ascii", strings.Repeat("a", 100) + "\xfe", 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []func(string) error{
				func(s string) error { _, err := normalize.String(s); return err },
				func(s string) error { _, err := normalize.Append(nil, s); return err },
			} {
				err := call(tc.in)
				if !errors.Is(err, normalize.ErrInvalidUTF8) {
					t.Fatalf("err = %v, want ErrInvalidUTF8", err)
				}
				var ue *normalize.InvalidUTF8Error
				if !errors.As(err, &ue) || ue.Offset != tc.off {
					t.Fatalf("err = %v, want offset %d", err, tc.off)
				}
			}
			if normalize.IsCanonical(tc.in) {
				t.Fatalf("IsCanonical(%q) = true for invalid UTF-8", tc.in)
			}
		})
	}
}

func TestCanonicalKeysDoNotAllocate(t *testing.T) {
	for _, s := range []string{
		"3f2504e0-4f89-11d3-9a0c-0305e82c3301",
		"",
		"\u540c\u6b65\u8bb0\u5f55-\u4e2d\u6587",
		"caf\u00e9",
	} {
		var out string
		allocs := testing.AllocsPerRun(100, func() {
			out, _ = normalize.String(s)
		})
		if allocs != 0 {
			t.Errorf("String(%q) allocates %.0f times, want 0", s, allocs)
		}
		if out != s {
			t.Errorf("String(%q) = %q, want the input back", s, out)
		}
	}
}

// TestTablesWanted: SYNCFILTER_WANT_TABLES names the tables the build
// must have (make unicode-newer: 17.0.0, so that the pinned path runs).
func TestTablesWanted(t *testing.T) {
	if want := os.Getenv("SYNCFILTER_WANT_TABLES"); want != "" && normalize.TablesVersion() != want {
		t.Fatalf("tables %s, want %s", normalize.TablesVersion(), want)
	}
}

// TestCanonicalSlowKeysDoNotAllocate: a canonical key that the quick
// path leaves to the full one is composed in pooled buffers and returned
// as it is (sync.Pool drops buffers at random under the race detector).
func TestCanonicalSlowKeysDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops buffers under the race detector")
	}
	for _, s := range []string{"\u0915\u093c", "x\u1100\u0301\u1161", "\u00e1\u0316-\u0301", "\U00010041\u0301"} {
		if !normalize.IsCanonical(s) {
			t.Fatalf("%+q is not canonical", s)
		}
		_, _ = normalize.String(s) // the pool's buffers
		if n := testing.AllocsPerRun(100, func() { _, _ = normalize.String(s) }); n != 0 {
			t.Errorf("String(%+q): %v allocations", s, n)
		}
	}
}

func TestPolicyAndVersion(t *testing.T) {
	if got, want := normalize.Policy, "nfc/1"; got != want {
		t.Fatalf("Policy = %q, want %q", got, want)
	}
	if got := normalize.UnicodeVersion(); got != normalize.PinnedUnicode || normalize.TablesVersion() != norm.Version {
		t.Fatalf("UnicodeVersion() = %q, TablesVersion() = %q", got, normalize.TablesVersion())
	}
}

// FuzzString checks String against the standard's composition as written
// (referenceNFC, on golang.org/x/text's decomposition tables; its own NFC
// composes wrongly before v0.42.0 and, like its NFD, inserts U+034F after
// 30 non-starters): valid input gives NFC, is
// canonically equivalent and idempotent; invalid input is an error with
// an offset that really is invalid.
func FuzzString(f *testing.F) {
	for _, g := range keycorpus.Groups() {
		for _, s := range g.Spellings {
			if len(s) < 1024 {
				f.Add(s)
			}
		}
	}
	// Runs of more than 30 non-starters (no U+034F, sorted as a whole).
	f.Add("a" + strings.Repeat("\u0301", 40) + "\u0323")
	f.Add("o" + strings.Repeat("\u0344\u0316", 20) + "\u1100\u1161")
	f.Add("\xff")
	f.Add("a\xed\xa0\x80")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := normalize.String(s)
		if !utf8.ValidString(s) {
			var ue *normalize.InvalidUTF8Error
			if !errors.As(err, &ue) {
				t.Fatalf("invalid input %q: err = %v", s, err)
			}
			if !utf8.ValidString(s[:ue.Offset]) {
				t.Fatalf("offset %d is not the first invalid byte of %q", ue.Offset, s)
			}
			if r, n := utf8.DecodeRuneInString(s[ue.Offset:]); r != utf8.RuneError || n > 1 {
				t.Fatalf("offset %d of %q starts a valid rune", ue.Offset, s)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid input %q: %v", s, err)
		}
		if normalize.AllAssigned(s) { // the pinned cuts aside (pinned_test.go)
			if want := normalize.ReferenceNFC(s); got != want {
				t.Fatalf("String(%q) = %q, want %q", s, got, want)
			}
			if normalize.ReferenceNFD(got) != normalize.ReferenceNFD(s) {
				t.Fatalf("String(%q) = %q: not canonically equivalent", s, got)
			}
		}
		again, err := normalize.String(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", s, got, again, err)
		}
		if !normalize.IsCanonical(got) {
			t.Fatalf("IsCanonical(String(%q)) = false", s)
		}
	})
}
