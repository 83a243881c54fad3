package rebuild

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/syncfilter/syncfilter/normalize"
	"github.com/syncfilter/syncfilter/syncfilter"
)

// MaxKeyBytes is the longest key the index accepts, in bytes of UTF-8,
// before and after normalization: 64 KiB, far above any record id. Longer
// keys are refused with ErrKeyTooLong before any SQL is built; stored keys
// longer than this are skipped by scans (Stats.SkippedKeys), since no
// query can name them.
const MaxKeyBytes = 64 << 10

// canonical returns the canonical form of one key, or an error wrapping
// normalize.ErrInvalidUTF8 or ErrKeyTooLong.
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
// other key; it lists the invalid ones as missing, never as fetched.
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

// canonicalPage returns the canonical form of every key that has one
// (invalid ones are "") and the positions of the valid keys; bad lists
// the others, or is nil.
func canonicalPage(keys []string) (canon []string, valid []int, bad *InvalidKeysError) {
	canon = make([]string, len(keys))
	valid = make([]int, 0, len(keys))
	for i, k := range keys {
		c, err := canonical(k)
		if err != nil {
			if bad == nil {
				bad = &InvalidKeysError{}
			}
			bad.Keys = append(bad.Keys, &syncfilter.KeyError{Index: i, Err: err})
			continue
		}
		canon[i] = c
		valid = append(valid, i)
	}
	return canon, valid, bad
}

// pick returns canon[i] for every i in at.
func pick(canon []string, at []int) []string {
	out := make([]string, len(at))
	for j, i := range at {
		out[j] = canon[i]
	}
	return out
}

// goid returns the calling goroutine's id, read from its stack header
// ("goroutine 42 [running]:"). It costs about a microsecond: the index
// calls it only while an Update runs.
func goid() int64 {
	var buf [64]byte
	s, _ := strings.CutPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		if id, err := strconv.ParseInt(s[:i], 10, 64); err == nil {
			return id
		}
	}
	return -1
}
