package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/sqlitecode"
)

// codeError has a SQLite result code as modernc's errors do.
type codeError struct {
	msg  string
	code int
}

func (e *codeError) Error() string { return e.msg }
func (e *codeError) Code() int     { return e.code }

func TestRedact(t *testing.T) {
	const key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	q := url.Values{"vfs": {"adiantum"}, "hexkey": {key}, "textkey": {"a b+c"}, "x": {"1"}}
	plain := errors.New("unable to open database file")
	if got := redact(plain, q); got != plain {
		t.Fatalf("an error without a value became %v", got)
	}
	for _, err := range []error{
		fmt.Errorf("open: %w", &codeError{"no such vfs: " + key, sqlitecode.CantOpen}),
		errors.New("invalid textkey a%20b%2Bc and a+b%2Bc"),
	} {
		got := redact(err, q)
		for _, v := range []string{key, "a b+c", "a%20b%2Bc", "a+b%2Bc"} {
			if strings.Contains(got.Error(), v) {
				t.Fatalf("redact(%q) = %q, shows %q", err, got, v)
			}
		}
		if c, ok := sqlitecode.Of(err); ok != (sqlitecode.Primary(got) != 0) || sqlitecode.Primary(got) != c&0xff {
			t.Fatalf("redact(%q): code %d, want %d", err, sqlitecode.Primary(got), c)
		}
		if errors.Unwrap(got) != nil {
			t.Fatalf("redact(%q) wraps %v, which shows the key", err, errors.Unwrap(got))
		}
	}
}
