package rebuild

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// MaxKeyBytes is the longest key the index accepts, in bytes of UTF-8,
// before and after normalization: 64 KiB, far above any record id. Longer
// keys are refused with ErrKeyTooLong before any SQL is built; stored keys
// longer than this are skipped by scans (Stats.SkippedKeys), since no
// query can name them.
const MaxKeyBytes = store.MaxKeyBytes

// canonical returns the canonical form of one key asked about, or an
// error wrapping normalize.ErrInvalidUTF8 or ErrKeyTooLong.
func canonical(key string) (string, error) {
	if len(key) > MaxKeyBytes {
		return "", fmt.Errorf("%d bytes, at most %d: %w", len(key), MaxKeyBytes, ErrKeyTooLong)
	}
	c, err := normalize.String(key)
	if err != nil {
		return "", err
	}
	if len(c) > MaxKeyBytes {
		return "", fmt.Errorf("%d bytes in NFC, at most %d: %w", len(c), MaxKeyBytes, ErrKeyTooLong)
	}
	return c, nil
}

// maySpell reports whether a canonical key may be stored under another
// spelling at all, so that a confirmation must ask the stored spellings
// about it: one holding a character outside ASCII, or one of the three
// ASCII characters that a character outside ASCII stands for canonically
// (KELVIN SIGN for "K", GREEK QUESTION MARK for ";", GREEK VARIA for
// "`": TestMaySpellCoversEveryEquivalent checks every code point). A key
// of other ASCII characters has no other spelling.
func maySpell(key string) bool {
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c >= 0x80, c == 'K', c == ';', c == '`':
			return true
		}
	}
	return false
}

// canonicalStored returns the canonical form of a stored key (from a
// scan or the log). A stored spelling may be longer than MaxKeyBytes
// while its canonical form is not (NFC composes up to three bytes into
// one character: store.MaxStoredBytes), so it is normalized first and
// the canonical form is bounded. An error means no query can name it.
func canonicalStored(key string) (string, error) {
	if len(key) > store.MaxStoredBytes {
		return "", fmt.Errorf("%d bytes stored, at most %d: %w", len(key), store.MaxStoredBytes, ErrKeyTooLong)
	}
	c, err := normalize.String(key)
	if err != nil {
		return "", err
	}
	if len(c) > MaxKeyBytes {
		return "", fmt.Errorf("%d bytes in NFC, at most %d: %w", len(c), MaxKeyBytes, ErrKeyTooLong)
	}
	return c, nil
}

// canonicalAll returns the canonical forms of keys, or a *KeyError for
// the first key that has none.
func canonicalAll(keys []string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		c, err := canonical(k)
		if err != nil {
			return nil, &syncfilter.KeyError{Index: i, Err: err}
		}
		out[i] = c
	}
	return out, nil
}

// InvalidKeysError lists the keys of a page that could not be compared:
// not valid UTF-8, or longer than MaxKeyBytes. Missing still answers every
// other key; it answers the invalid ones missing, never fetched.
// errors.Is(err, normalize.ErrInvalidUTF8) and errors.Is(err,
// ErrKeyTooLong) look through it.
type InvalidKeysError struct {
	Keys []*syncfilter.KeyError // in input order; Index is the position in the page
}

func (e *InvalidKeysError) Error() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(e.Keys)))
	b.WriteString(" invalid key(s): ")
	for i, k := range e.Keys {
		if i == 3 {
			b.WriteString("; ...")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(k.Error())
	}
	return b.String()
}

func (e *InvalidKeysError) Unwrap() []error {
	errs := make([]error, len(e.Keys))
	for i, k := range e.Keys {
		errs[i] = k
	}
	return errs
}

// Positions returns the positions of the invalid keys in the page.
func (e *InvalidKeysError) Positions() []int {
	out := make([]int, len(e.Keys))
	for i, k := range e.Keys {
		out[i] = k.Index
	}
	return out
}

// page is one Missing call's keys: their canonical forms and the invalid
// ones.
type page struct {
	keys  []string
	canon []string // canonical form of each key; "" for an invalid one
	valid []int    // positions of the valid keys
	bad   *InvalidKeysError
}

func newPage(keys []string) *page {
	p := &page{keys: keys, canon: make([]string, len(keys)), valid: make([]int, 0, len(keys))}
	for i, k := range keys {
		c, err := canonical(k)
		if err != nil {
			if p.bad == nil {
				p.bad = &InvalidKeysError{}
			}
			p.bad.Keys = append(p.bad.Keys, &syncfilter.KeyError{Index: i, Err: err})
			continue
		}
		p.canon[i] = c
		p.valid = append(p.valid, i)
	}
	return p
}

// askedKeys returns the canonical forms of the valid keys, in order.
func (p *page) askedKeys() []string {
	if p.bad == nil {
		return p.canon
	}
	out := make([]string, len(p.valid))
	for j, i := range p.valid {
		out[j] = p.canon[i]
	}
	return out
}

// missing answers each position of the page: true where the key was not
// found (found answers askedKeys) or is invalid.
func (p *page) missing(found []bool) []bool {
	out := make([]bool, len(p.keys))
	if p.bad == nil {
		for i, f := range found {
			out[i] = !f
		}
		return out
	}
	for i := range out {
		out[i] = true
	}
	for j, i := range p.valid {
		out[i] = !found[j]
	}
	return out
}
