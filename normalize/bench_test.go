package normalize_test

import (
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/syncfilter/syncfilter/normalize"
)

// slowKeys are keys that are not canonical: the path that composes.
var slowKeys = []struct{ name, key string }{
	{"latin-nfd", "Dvor\u030ca\u0301k-Ange\u0301lique-12"},
	{"uuid+mark", "3f2504e0-4f89-11d3-9a0c-0305e82c3301e\u0301"},
	{"vietnamese-nfd", "Tie\u0302\u0301ng Vie\u0323\u0302t co\u0301 da\u0302\u0301u"},
	{"hangul-jamo", "\u1112\u1161\u11ab\u1100\u1173\u11af-\u1109\u1165\u110b\u116e\u11af"},
	{"greek-marks", "\u03b1\u0313\u0301\u03b9\u0345\u03b5\u0301\u03bb\u03bb\u03b7\u0342\u03bd"},
	{"angstrom", "\u212bngstr\u00f6m-7"},
	// 40 marks after one letter: more than the 30 after which the
	// Stream-Safe Text Format (golang.org/x/text) inserts U+034F, and
	// more than the run held on the stack.
	{"long-run", "zalgo-a" + strings.Repeat("\u0301\u0316\u0334\u0308", 10)},
}

// BenchmarkSlowPath: String on keys that are not canonical; xtext is
// golang.org/x/text's own NFC of the same key, for comparison (what c
// was before it composed itself).
func BenchmarkSlowPath(b *testing.B) {
	for _, k := range slowKeys {
		b.Run(k.name+"/normalize", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := normalize.String(k.key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(k.name+"/xtext", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = norm.NFC.String(k.key)
			}
		})
	}
}
