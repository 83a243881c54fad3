package gate

import (
	"fmt"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// MaxKeyBytes is the longest key accepted, in bytes of UTF-8, before and
// after normalization.
const MaxKeyBytes = store.MaxKeyBytes

// Canonical returns the form of a key asked about under the source's
// Compare (its NFC form, or the key itself byte for byte), or an error
// wrapping normalize.ErrInvalidUTF8 or ErrKeyTooLong.
func (g *Gate) Canonical(key string) (string, error) { return canonical(g.cfg.Compare, key) }

func canonical(cmp syncfilter.Compare, key string) (string, error) {
	if len(key) > MaxKeyBytes {
		return "", fmt.Errorf("%d bytes, at most %d: %w", len(key), MaxKeyBytes, store.ErrKeyTooLong)
	}
	return bounded(cmp, key)
}

// CanonicalStored returns the form of a stored key under the source's
// Compare. A stored spelling may be longer than MaxKeyBytes while its
// canonical form is not (NFC composes up to three bytes into one
// character): it is normalized first and the canonical form bounded. An
// error: no query can name it.
func (g *Gate) CanonicalStored(key string) (string, error) {
	return canonicalStored(g.cfg.Compare, key)
}

func canonicalStored(cmp syncfilter.Compare, key string) (string, error) {
	if len(key) > store.MaxStoredBytes {
		return "", fmt.Errorf("%d bytes stored, at most %d: %w", len(key), store.MaxStoredBytes, store.ErrKeyTooLong)
	}
	return bounded(cmp, key)
}

func bounded(cmp syncfilter.Compare, key string) (string, error) {
	c, err := cmp.Form(key)
	if err != nil {
		return "", err
	}
	if len(c) > MaxKeyBytes {
		return "", fmt.Errorf("%d bytes in NFC, at most %d: %w", len(c), MaxKeyBytes, store.ErrKeyTooLong)
	}
	return c, nil
}

// MaySpell reports whether a canonical key may be stored under another
// spelling at all: one holding a character outside ASCII, or one of the
// three ASCII characters a character outside ASCII stands for
// canonically (KELVIN SIGN for "K", GREEK QUESTION MARK for ";", GREEK
// VARIA for "`"). A key of other ASCII characters has no other spelling.
func MaySpell(key string) bool { return maySpell(key) }

func maySpell(key string) bool {
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c >= 0x80, c == 'K', c == ';', c == '`':
			return true
		}
	}
	return false
}

// Versioned reports whether the source names a version column.
func (g *Gate) Versioned() bool { return g.cfg.Version != "" }

// Compare returns which ids are one key in the source.
func (g *Gate) Compare() syncfilter.Compare { return g.cfg.Compare }

// spells is maySpell under the source's Compare: byte for byte, a key
// has one spelling and the machinery of stored spellings is never used.
func (g *Gate) spells(key string) bool {
	return g.cfg.Compare == syncfilter.CompareCanonical && maySpell(key)
}

// spelledFunc is spells as a function the store calls per key.
func (g *Gate) spelledFunc() func(string) bool {
	if g.cfg.Compare == syncfilter.CompareCanonical {
		return maySpell
	}
	return oneSpelling
}

func oneSpelling(string) bool { return false }

func (g *Gate) anySpelled(keys []string) bool {
	for _, k := range keys {
		if g.spells(k) {
			return true
		}
	}
	return false
}
