package rebuild

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
	"golang.org/x/text/unicode/norm"
)

// The reference the answers of the key tests are judged against: the
// table as it is, read on a connection of its own, and canonical forms
// computed by golang.org/x/text (NFC) and the documented bounds, not by
// the library.

// canonRef returns the canonical form of a key of at most limit bytes:
// MaxKeyBytes for a key asked, 3 × MaxKeyBytes for a stored one (NFC
// composes up to three bytes into one character). ok is false for a key
// that has none: not valid UTF-8, longer than limit, or longer than
// MaxKeyBytes in NFC.
func canonRef(k string, limit int) (c string, ok bool) {
	if len(k) > limit || !utf8.ValidString(k) {
		return "", false
	}
	c = norm.NFC.String(k)
	if len(c) > MaxKeyBytes {
		return "", false
	}
	return c, true
}

// storedCanon returns the canonical forms of the text ids table holds:
// a key asked is fetched exactly when its canonical form is one of them.
func storedCanon(t testing.TB, path, table string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for id := range tableIDs(t, path, table) {
		if c, ok := canonRef(id, 3*MaxKeyBytes); ok {
			out[c] = true
		}
	}
	return out
}

// verdict is the reference's answer about one key asked: invalid (no
// canonical form: answered missing, and named as invalid), or fetched.
type verdict struct{ invalid, fetched bool }

func verdictOf(canon map[string]bool, k string) verdict {
	c, ok := canonRef(k, MaxKeyBytes)
	if !ok {
		return verdict{invalid: true}
	}
	return verdict{fetched: canon[c]}
}

// judgePage asks page through Missing, then each distinct key through
// Fetched (unless fetched is false), and reports every answer that
// differs from the reference: each position of the page answered on
// its own (a repeated key and every spelling of one id alike), an
// invalid key answered missing and named by its position in the
// *InvalidKeysError, and refused by Fetched with an error naming why.
// what says which path asked, for the failure message.
func judgePage(t testing.TB, ix *Index, canon map[string]bool, page []string, fetched bool, what string) {
	t.Helper()
	ctx := context.Background()
	want := make([]verdict, len(page))
	var wantBad []int
	for i, k := range page {
		if want[i] = verdictOf(canon, k); want[i].invalid {
			wantBad = append(wantBad, i)
		}
	}
	missing, err := ix.Missing(ctx, page)
	var ike *InvalidKeysError
	switch {
	case wantBad == nil && err != nil:
		t.Fatalf("%s: Missing of %d keys: %v", what, len(page), err)
	case wantBad != nil && !errors.As(err, &ike):
		t.Fatalf("%s: Missing of a page with invalid keys at %v: error %v, want an *InvalidKeysError", what, wantBad, err)
	case wantBad != nil && !slices.Equal(positions(ike), wantBad):
		t.Fatalf("%s: Missing names invalid keys at %v, want %v", what, positions(ike), wantBad)
	}
	if len(missing) != len(page) {
		t.Fatalf("%s: Missing answered %d positions of %d", what, len(missing), len(page))
	}
	var wrong []string
	for i, k := range page {
		if w := !want[i].fetched; missing[i] != w {
			wrong = append(wrong, fmt.Sprintf("[%d] %+.60q: missing %v, want %v", i, k, missing[i], w))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%s: %d of %d positions answered wrongly:\n%s", what, len(wrong), len(page), joinLines(wrong, 20))
	}
	if !fetched {
		return
	}
	seen := map[string]bool{}
	for i, k := range page {
		if seen[k] {
			continue
		}
		seen[k] = true
		got, err := ix.Fetched(ctx, k)
		switch {
		case want[i].invalid:
			if err == nil || got || !(errors.Is(err, normalize.ErrInvalidUTF8) || errors.Is(err, ErrKeyTooLong)) {
				t.Fatalf("%s: Fetched(%+.60q) of an invalid key = %v, %v; want false and why", what, k, got, err)
			}
		case err != nil:
			t.Fatalf("%s: Fetched(%+.60q): %v", what, k, err)
		case got != want[i].fetched:
			t.Fatalf("%s: Fetched(%+.60q) = %v, want %v", what, k, got, want[i].fetched)
		}
	}
}

// joinLines joins the first n lines, saying how many more there are.
func joinLines(lines []string, n int) string {
	out := ""
	for i, l := range lines {
		if i == n {
			return out + fmt.Sprintf("... and %d more", len(lines)-n)
		}
		out += l + "\n"
	}
	return out
}
