package store

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

const maxNameLen = 128

// CheckName accepts identifiers of letters, digits (not first), '_' and
// '$', at most 128 bytes, outside SQLite's "sqlite_" namespace; names are
// quoted in SQL as well (Quote).
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

// Quote returns name as an identifier in backquotes: SQLite reads a
// double-quoted name that names nothing as a string literal, so after the
// app dropped the column `WHERE "id" = ?` would answer "fetched" for the
// key "id"; a backquoted name fails instead.
func Quote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// mainTable returns table quoted in the main schema: the app may give its
// connections, where the library's statements may run, a TEMP table of the
// same name. (A trigger's table cannot be qualified; it is in main.)
func mainTable(table string) string { return inMain(Quote(table)) }

// inMain qualifies one of the library's own names (no quotes needed).
func inMain(name string) string { return "main." + name }
