// Command compgen writes normalize/compose.go: the primary composites of
// the Unicode version the canonical form is pinned to
// (normalize.PinnedUnicode), the pairs that canonical composition (UAX #15,
// section 3.11) joins into one code point, Hangul syllables aside (they
// compose algorithmically). It reads them from the Unicode Character
// Database, as Debian's unicode-data package installs it:
//
//	go run ./normalize/internal/compgen > normalize/compose.go
//
// A code point is a primary composite when UnicodeData.txt gives it a
// canonical decomposition mapping (one without a <tag>) and
// DerivedNormalizationProps.txt does not list it as
// Full_Composition_Exclusion (the composition exclusions, singletons and
// non-starter decompositions); every such mapping is a pair. The
// generator refuses to run unless the files are of the pinned version
// (ReadMe.txt and DerivedNormalizationProps.txt name it), so the table can
// only be regenerated from the right data. SYNCFILTER_UCD names another
// directory holding the files.
//
// TestCompositionTable checks the committed table against the files
// whenever they are installed (make test installs them).
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const pinned = "15.0.0"

func main() {
	pairs, err := Compositions(Dir())
	if err != nil {
		fmt.Fprintln(os.Stderr, "compgen:", err)
		os.Exit(1)
	}
	fmt.Print(Source(pairs))
}

// Dir is the directory holding the Unicode Character Database files.
func Dir() string {
	if d := os.Getenv("SYNCFILTER_UCD"); d != "" {
		return d
	}
	return "/usr/share/unicode"
}

// Pair is one primary composite: First followed by Second composes to
// Composite.
type Pair struct{ First, Second, Composite rune }

// Compositions reads the primary composites (Hangul syllables aside) from
// the database in dir, sorted by (First, Second).
func Compositions(dir string) ([]Pair, error) {
	if err := checkVersion(filepath.Join(dir, "ReadMe.txt"), "for Version "+pinned+" of the Unicode Standard"); err != nil {
		return nil, err
	}
	if err := checkVersion(filepath.Join(dir, "DerivedNormalizationProps.txt"), "# DerivedNormalizationProps-"+pinned+".txt"); err != nil {
		return nil, err
	}
	excluded := map[rune]bool{}
	err := eachLine(filepath.Join(dir, "DerivedNormalizationProps.txt"), func(f []string) error {
		if len(f) < 2 || f[1] != "Full_Composition_Exclusion" {
			return nil
		}
		lo, hi, err := codeRange(f[0])
		for r := lo; err == nil && r <= hi; r++ {
			excluded[r] = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(excluded) < 1000 {
		return nil, fmt.Errorf("only %d Full_Composition_Exclusion code points", len(excluded))
	}
	var out []Pair
	err = eachLine(filepath.Join(dir, "UnicodeData.txt"), func(f []string) error {
		if len(f) < 6 || f[5] == "" || strings.HasPrefix(f[5], "<") {
			return nil // no decomposition, or a compatibility one
		}
		r, err := codePoint(f[0])
		if err != nil {
			return err
		}
		d := strings.Fields(f[5])
		switch {
		case excluded[r]:
			return nil
		case len(d) != 2:
			return fmt.Errorf("U+%04X: canonical mapping %q, not excluded, is not a pair", r, f[5])
		}
		a, err := codePoint(d[0])
		if err != nil {
			return err
		}
		b, err := codePoint(d[1])
		if err != nil {
			return err
		}
		out = append(out, Pair{a, b, r})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].First != out[j].First {
			return out[i].First < out[j].First
		}
		return out[i].Second < out[j].Second
	})
	for i := 1; i < len(out); i++ {
		if out[i].First == out[i-1].First && out[i].Second == out[i-1].Second {
			return nil, fmt.Errorf("U+%04X U+%04X composes to both U+%04X and U+%04X", out[i].First, out[i].Second, out[i-1].Composite, out[i].Composite)
		}
	}
	return out, nil
}

// checkVersion fails unless the file has a line containing want.
func checkVersion(path, want string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%v (Debian: apt-get install unicode-data; or set SYNCFILTER_UCD)", err)
	}
	if !strings.Contains(string(b), want) {
		return fmt.Errorf("%s is not of Unicode %s (no line %q)", path, pinned, want)
	}
	return nil
}

// eachLine calls f with the trimmed ';'-separated fields of each data
// line of the file (comments dropped).
func eachLine(path string, f func(fields []string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, ";")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if err := f(fields); err != nil {
			return fmt.Errorf("%s: %q: %v", filepath.Base(path), sc.Text(), err)
		}
	}
	return sc.Err()
}

func codePoint(s string) (rune, error) {
	n, err := strconv.ParseUint(s, 16, 32)
	if err != nil || n > 0x10FFFF {
		return 0, fmt.Errorf("bad code point %q", s)
	}
	return rune(n), nil
}

func codeRange(s string) (lo, hi rune, err error) {
	a, b, ok := strings.Cut(s, "..")
	if lo, err = codePoint(a); err != nil || !ok {
		return lo, lo, err
	}
	hi, err = codePoint(b)
	return lo, hi, err
}

// Source renders the table as Go source of package normalize.
func Source(pairs []Pair) string {
	var sb strings.Builder
	sb.WriteString("// Code generated by normalize/internal/compgen from the Unicode Character\n" +
		"// Database " + pinned + " (UnicodeData.txt, DerivedNormalizationProps.txt). DO NOT EDIT.\n\n" +
		"package normalize\n\n" +
		"// compositions lists the primary composites of Unicode " + pinned + " but the\n" +
		"// Hangul syllables: the pair first, second as first<<21 | second, and the\n" +
		"// code point they compose to; sorted by pair.\n")
	fmt.Fprintf(&sb, "var compositions = [%d]struct {\n\tpair uint64\n\tr    rune\n}{\n", len(pairs))
	for _, p := range pairs {
		fmt.Fprintf(&sb, "\t{0x%04X<<21 | 0x%04X, 0x%04X},\n", p.First, p.Second, p.Composite)
	}
	sb.WriteString("}\n")
	return sb.String()
}
