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

// TestRedactPieces: a driver that pastes a value into SQL echoes the part
// after a quote in its syntax error; that part is cut out too.
func TestRedactPieces(t *testing.T) {
	t.Parallel()
	const key = "3f9c0e1b7a5d2c4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6"
	for _, c := range []struct {
		value, msg, secret string
	}{
		{`"hunter2-pass"`, `near "hunter2": syntax error`, "hunter2"},
		{`abc"` + key, `unrecognized token: "` + key + `"`, key},
		{"x'" + key + "'", `near "x` + key[:20] + `": syntax error`, key[:20]},
	} {
		got := redact(&codeError{msg: c.msg, code: 1}, url.Values{"_pragma_key": {c.value}})
		if strings.Contains(got.Error(), c.secret) {
			t.Errorf("redact(%q) = %q, shows %q", c.msg, got, c.secret)
		}
		if sqlitecode.Primary(got) != 1 {
			t.Errorf("redact(%q): code %d, want 1", c.msg, sqlitecode.Primary(got))
		}
	}
	// Words of the message that are in no value stay.
	msg := `near "select": syntax error`
	if got := redact(&codeError{msg: msg, code: 1}, url.Values{"_pragma_key": {"x'" + key + "'"}}); got.Error() != msg {
		t.Errorf("redact(%q) = %q, want it unchanged", msg, got)
	}
}
