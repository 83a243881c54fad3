package syncfilter

import (
	"errors"
	"strconv"
)

// Errors returned by this package. Each is wrapped with context ("verb noun:
// %w"); test with errors.Is.
var (
	// ErrInvalidParams is returned for parameters that cannot describe a
	// filter: n = 0, a false-positive rate outside (0, 1), m = 0, k outside
	// [1, MaxK], an unknown layout or hash.
	ErrInvalidParams = errors.New("invalid filter parameters")

	// ErrTooLarge is returned when a filter would need more than MaxBits
	// bits.
	ErrTooLarge = errors.New("filter too large")

	// ErrClosed is returned by inserts after Close.
	ErrClosed = errors.New("filter closed")
)

// KeyError reports which key of a batch could not be canonicalized. Err is
// the cause, typically a *normalize.InvalidUTF8Error, so
// errors.Is(err, normalize.ErrInvalidUTF8) holds.
type KeyError struct {
	Index int // position of the key in the batch
	Err   error
}

func (e *KeyError) Error() string {
	return "key " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }
