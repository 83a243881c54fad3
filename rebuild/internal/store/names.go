package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

const maxNameLen = 128

// CheckName accepts SQL identifiers made of letters, digits, '_' and '$',
// not starting with a digit, at most 128 bytes, and not in SQLite's
// reserved "sqlite_" namespace. Names are always quoted in SQL as well
// (Quote): the check keeps surprises out, the quoting keeps SQL
// well-formed.
func CheckName(kind, name string) error {
	bad := func(why string) error {
		return fmt.Errorf("check %s name %q: %s: %w", kind, name, why, ErrBadConfig)
	}
	switch {
	case name == "":
		return bad("empty")
	case len(name) > maxNameLen:
		return bad(fmt.Sprintf("longer than %d bytes", maxNameLen))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.HasPrefix(strings.ToLower(name), "sqlite_"):
		return bad(`the "sqlite_" prefix is reserved`)
	}
	for i, r := range name {
		switch {
		case r == '_' || r == '$' || unicode.IsLetter(r):
		case unicode.IsDigit(r) && i > 0:
		default:
			return bad(fmt.Sprintf("character %q at byte %d", r, i))
		}
	}
	return nil
}

// Quote returns name as a quoted SQL identifier, in backquotes: SQLite
// reads a double-quoted name that names no column or table as a string
// literal (for compatibility), so after the app renamed or dropped the
// column, `WHERE "id" = ?` would compare the text 'id' with the key, and
// answer "fetched" for the key "id". A backquoted name is only ever an
// identifier: the statement fails instead.
func Quote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// mainTable returns table quoted and qualified by the main schema: the
// library's statements on the app's pool run on connections the app may
// have given a TEMP table or view of the same name, which an unqualified
// name would find first. (A trigger's table cannot be qualified; it is
// in the trigger's own schema, main.)
func mainTable(table string) string {
	return inMain(Quote(table))
}

// inMain qualifies one of the library's own table names (which need no
// quotes) by the main schema, in the statements that may run on the
// app's pool (the probe, the head, a confirmation), for the reason
// mainTable gives.
func inMain(name string) string { return "main." + name }
