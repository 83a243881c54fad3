package gate

import (
	"fmt"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// MaxKeyBytes is the longest key accepted, in bytes of UTF-8, before and
// after normalization.
const MaxKeyBytes = store.MaxKeyBytes

// Canonical returns the canonical form of a key asked about, or an error
// wrapping normalize.ErrInvalidUTF8 or ErrKeyTooLong.
func Canonical(key string) (string, error) {
	if len(key) > MaxKeyBytes {
		return "", fmt.Errorf("%d bytes, at most %d: %w", len(key), MaxKeyBytes, store.ErrKeyTooLong)
	}
	return bounded(key)
}

// CanonicalStored returns the canonical form of a stored key. A stored
// spelling may be longer than MaxKeyBytes while its canonical form is not
// (NFC composes up to three bytes into one character): it is normalized
// first and the canonical form bounded. An error: no query can name it.
func CanonicalStored(key string) (string, error) {
	if len(key) > store.MaxStoredBytes {
		return "", fmt.Errorf("%d bytes stored, at most %d: %w", len(key), store.MaxStoredBytes, store.ErrKeyTooLong)
	}
	return bounded(key)
}

func bounded(key string) (string, error) {
	c, err := normalize.String(key)
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

func anySpelled(keys []string) bool {
	for _, k := range keys {
		if maySpell(k) {
			return true
		}
	}
	return false
}
