package rebuild

import (
	"context"
	"errors"
	"fmt"
	"github.com/syncfilter/syncfilter/rebuild/internal/gate"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// TestMaySpellCoversEveryEquivalent: a key maySpell leaves out has no
// other spelling. A spelling s of an ASCII key c has NFD(s) = NFD(c) = c,
// so every code point of s decomposes to ASCII alone, and its canonical
// form is those ASCII characters, which then appear in c. The test checks
// that every code point outside ASCII whose canonical form holds an ASCII
// character holds only characters maySpell names.
func TestMaySpellCoversEveryEquivalent(t *testing.T) {
	t.Parallel()
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		c, err := normalize.String(string(r))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(c); i++ {
			if c[i] < 0x80 && !gate.MaySpell(c[i:i+1]) {
				t.Fatalf("%U is canonically %q, holding %q, which maySpell says has no other spelling", r, c, c[i])
			}
		}
	}
	for _, k := range []string{"plain-123", "0123456789abcdef", "UPPER-ID"} {
		if gate.MaySpell(k) {
			t.Errorf("gate.MaySpell(%q): an ASCII key without K, ; or ` has one spelling", k)
		}
	}
	for _, k := range []string{"Kelvin", "a;b", "`q", "café"} {
		if !gate.MaySpell(k) {
			t.Errorf("gate.MaySpell(%q) = false", k)
		}
	}
}

func TestInvalidKeys(t *testing.T) {
	t.Parallel()
	path := appDB(t, "good")
	db := rawDB(t, path)
	mustExec(t, db, `INSERT INTO records (id) VALUES (CAST(x'ff00' AS TEXT))`) // invalid UTF-8 stored by another tool
	ix := open(t, appConfig(path))
	ctx := context.Background()
	if st := stats(ix); st.SkippedKeys != 1 {
		t.Fatalf("SkippedKeys = %d, want 1", st.SkippedKeys)
	}
	if _, err := ix.Fetched(ctx, "bad\xff"); !errors.Is(err, normalize.ErrInvalidUTF8) {
		t.Fatalf("Fetched(invalid): %v", err)
	}
	_, err := missingList(ctx, ix, []string{"good", "x\xc3", "y"})
	var ke *syncfilter.KeyError
	if !errors.As(err, &ke) || ke.Index != 1 || !errors.Is(err, normalize.ErrInvalidUTF8) {
		t.Fatalf("Missing(invalid): %v", err)
	}
	expect(t, ix, set([]string{"good"}), []string{"good", "other"})
}

// TestMissingAnswersAroundInvalidIDs: invalid ids in a page are reported
// by position and listed as missing; every valid id is answered.
func TestMissingAnswersAroundInvalidIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stored := ids("ok", 20)
	ix := open(t, appConfig(appDB(t, stored...)))
	long := strings.Repeat("x", MaxKeyBytes+1)
	page := []string{stored[0], "new-1", "bad\xff", stored[1], long, "new-2", "\xc3", stored[2]}
	missing, err := missingList(ctx, ix, page)
	var ike *InvalidKeysError
	if !errors.As(err, &ike) || fmt.Sprint(positions(ike)) != "[2 4 6]" {
		t.Fatalf("Missing error = %v, want invalid keys at [2 4 6]", err)
	}
	if !errors.Is(err, normalize.ErrInvalidUTF8) || !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("Missing error %v does not unwrap to its causes", err)
	}
	want := []string{"new-1", "bad\xff", long, "new-2", "\xc3"}
	if fmt.Sprintf("%q", missing) != fmt.Sprintf("%q", want) {
		t.Fatalf("Missing = %.80q, want %.80q", missing, want)
	}
	if _, err := ix.Fetched(ctx, long); !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("Fetched(long) = %v", err)
	}
	exact := strings.Repeat("y", MaxKeyBytes)
	if ok, err := ix.Fetched(ctx, exact); err != nil || ok {
		t.Fatalf("Fetched(exactly MaxKeyBytes) = %v, %v", ok, err)
	}
	if m, err := missingList(ctx, ix, []string{exact}); err != nil || len(m) != 1 {
		t.Fatalf("Missing(exactly MaxKeyBytes) = %d keys, %v", len(m), err)
	}
}
