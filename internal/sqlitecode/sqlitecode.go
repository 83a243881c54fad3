// Package sqlitecode reads SQLite's result code out of an error returned
// by any of the SQLite drivers the library supports, without importing
// them: github.com/mattn/go-sqlite3 (an Error struct with an ExtendedCode
// field), modernc.org/sqlite (an *Error whose Code method returns the
// extended code) and github.com/ncruces/go-sqlite3 (an *Error with an
// ExtendedCode method, or an ErrorCode or ExtendedErrorCode value that is
// itself the error). A program links the driver its app chose; this
// package must not link another.
package sqlitecode

import "reflect"

// Result codes the library looks for (https://sqlite.org/rescode.html).
const (
	Busy             = 5
	Locked           = 6
	ReadOnly         = 8
	Interrupt        = 9
	CantOpen         = 14
	NotADB           = 26 // not a database file, or an encrypted one read with a wrong or no key
	Perm             = 3
	ReadOnlyRollback = ReadOnly | 3<<8 // a read-only connection found a hot journal
)

// Of returns the extended result code of the first SQLite error in err's
// chain, and whether there is one. The primary code is Of(err) & 0xff.
func Of(err error) (int, bool) {
	c, e := Find(err)
	return c, e != nil
}

// Find returns the extended result code of the first SQLite error in
// err's chain, and that error (nil when there is none).
func Find(err error) (code int, sqliteErr error) {
	for _, e := range chain(err) {
		if c, ok := of(e); ok {
			return c, e
		}
	}
	return 0, nil
}

// Primary returns the primary result code of err (Of & 0xff), or 0.
func Primary(err error) int {
	c, _ := Of(err)
	return c & 0xff
}

// of reads the code of one error value by its shape.
func of(e error) (int, bool) {
	v := reflect.ValueOf(e)
	if !v.IsValid() {
		return 0, false
	}
	// ncruces: (*Error).ExtendedCode() ExtendedErrorCode.
	if m := v.MethodByName("ExtendedCode"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
		if n, ok := integer(m.Call(nil)[0]); ok {
			return n, true
		}
	}
	// mattn: Error{Code ErrNo; ExtendedCode ErrNoExtended; ...}, a value.
	if s := reflect.Indirect(v); s.Kind() == reflect.Struct {
		if f := s.FieldByName("ExtendedCode"); f.IsValid() {
			if n, ok := integer(f); ok {
				return n, true
			}
		}
	}
	// modernc: (*Error).Code() int, the extended code.
	if c, ok := e.(interface{ Code() int }); ok {
		return c.Code(), true
	}
	// ncruces: an ErrorCode (uint8) or ExtendedErrorCode (uint16) returned
	// as the error itself.
	if t := v.Type(); t.PkgPath() == "github.com/ncruces/go-sqlite3" {
		if n, ok := integer(v); ok {
			return n, true
		}
	}
	return 0, false
}

// integer returns v as an int if it is of an integer kind.
func integer(v reflect.Value) (int, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int(v.Uint()), true
	}
	return 0, false
}

// chain lists err and what it wraps, depth first (errors.Is's order),
// bounded so that a cyclic chain cannot loop.
func chain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) >= 64 {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// Is reports whether err carries the SQLite result code code: an
// extended code compares whole, a primary code (below 256) with the
// primary part.
func Is(err error, code int) bool {
	c, ok := Of(err)
	if !ok {
		return false
	}
	if code < 256 {
		return c&0xff == code
	}
	return c == code
}
