package normalize

import (
	"errors"
	"strconv"
)

// ErrInvalidUTF8 is reported (through errors.Is) for a key that is not valid
// UTF-8. The error value itself is an *InvalidUTF8Error naming the offset.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// InvalidUTF8Error reports the byte offset of the first byte of a key that
// does not start a valid UTF-8 sequence.
type InvalidUTF8Error struct {
	Offset int // byte offset of the first invalid byte
}

func (e *InvalidUTF8Error) Error() string {
	return "normalize key: invalid UTF-8 at byte offset " + strconv.Itoa(e.Offset)
}

// Unwrap returns ErrInvalidUTF8.
func (e *InvalidUTF8Error) Unwrap() error { return ErrInvalidUTF8 }
