package rebuild

import (
	"testing"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
)

// TestMaySpellCoversEveryEquivalent: a key maySpell leaves out has no
// other spelling. A spelling s of an ASCII key c has NFD(s) = NFD(c) = c,
// so every code point of s decomposes to ASCII alone, and its canonical
// form is those ASCII characters, which then appear in c. The test checks
// that every code point outside ASCII whose canonical form holds an ASCII
// character holds only characters maySpell names.
func TestMaySpellCoversEveryEquivalent(t *testing.T) {
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		c, err := normalize.String(string(r))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(c); i++ {
			if c[i] < 0x80 && !maySpell(c[i:i+1]) {
				t.Fatalf("%U is canonically %q, holding %q, which maySpell says has no other spelling", r, c, c[i])
			}
		}
	}
	for _, k := range []string{"plain-123", "0123456789abcdef", "UPPER-ID"} {
		if maySpell(k) {
			t.Errorf("maySpell(%q): an ASCII key without K, ; or ` has one spelling", k)
		}
	}
	for _, k := range []string{"Kelvin", "a;b", "`q", "café"} {
		if !maySpell(k) {
			t.Errorf("maySpell(%q) = false", k)
		}
	}
}
