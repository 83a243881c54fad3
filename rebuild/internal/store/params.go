package store

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/syncfilter/syncfilter/internal/sqlitecode"
)

// The app's connection parameters (DBConfig.ConnParams) are added to the
// URI of every connection the library opens: an encrypting VFS and its
// key, say. They may hold a secret, so no message of the library names
// their values: a refused parameter is named by its key alone, and a
// driver's error that echoes a value has it cut out (redact).

// ownParams are the URI parameters the library sets or relies on itself:
// SQLite's (sqlite.org/uri.html) and the drivers' (mattn's "_" options,
// modernc's and ncruces' _txlock and time formats).
var ownParams = map[string]string{
	"mode":      "the library opens its readers read-only and its writer read-write",
	"cache":     "the library's connections use a private cache",
	"immutable": "the library follows the app's writes",
	"nolock":    "the library's connections lock as the app's do",
	"modeof":    "the library creates no database an app shares",

	"_busy_timeout": "DBConfig.BusyTimeout sets it", "_timeout": "DBConfig.BusyTimeout sets it",
	"_synchronous": "the library keeps SQLite's synchronous=FULL", "_sync": "the library keeps SQLite's synchronous=FULL",
	"_journal_mode": "the journal mode stays the app's", "_journal": "the journal mode stays the app's",
	"_locking_mode": "the library's connections lock as the app's do", "_locking": "the library's connections lock as the app's do",
	"_query_only": "the library opens its readers read-only and its writer read-write",
	"_txlock":     "the library begins its transactions itself",
	"_timefmt":    "the library reads text as text", "_time_format": "the library reads text as text", "_loc": "the library reads text as text",
}

// ownPragmas are the PRAGMAs a _pragma parameter may not run, for the
// same reasons.
var ownPragmas = map[string]string{
	"busy_timeout": "DBConfig.BusyTimeout sets it",
	"journal_mode": "the journal mode stays the app's",
	"locking_mode": "the library's connections lock as the app's do",
	"synchronous":  "the library keeps SQLite's synchronous=FULL",
	"query_only":   "the library opens its readers read-only and its writer read-write",
}

// CheckParams refuses connection parameters the library sets itself,
// with ErrBadConfig; the message names keys and PRAGMAs, never a value.
func CheckParams(q url.Values) error {
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if k == "" {
			return fmt.Errorf("check DBConfig.ConnParams: a parameter without a name: %w", ErrBadConfig)
		}
		if why, ok := ownParams[strings.ToLower(k)]; ok {
			return fmt.Errorf("check DBConfig.ConnParams: %q is the library's own (%s): %w", k, why, ErrBadConfig)
		}
		if strings.EqualFold(k, "_pragma_key") && slices.ContainsFunc(q[k], func(v string) bool { return strings.ContainsRune(v, '"') }) {
			// go-sqlcipher pastes it into PRAGMA key = "…": a quote ends
			// the string, and SQLite's error would echo what follows.
			return fmt.Errorf(`check DBConfig.ConnParams: _pragma_key holds a '"' (SQLCipher's PRAGMA key takes the key between double quotes: x'hex' or a passphrase without them): %w`, ErrBadConfig)
		}
		if k != "_pragma" {
			continue
		}
		for _, p := range q[k] {
			name, _, _ := strings.Cut(p, "(")
			name, _, _ = strings.Cut(name, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			if _, n, ok := strings.Cut(name, "."); ok { // schema.name
				name = n
			}
			if why, ok := ownPragmas[name]; ok {
				return fmt.Errorf("check DBConfig.ConnParams: _pragma %s is the library's own (%s): %w", name, why, ErrBadConfig)
			}
		}
	}
	return nil
}

// encodeParams is q as URI query text, every byte outside the unreserved
// set percent-encoded (a space as %20: SQLite reads no '+' as a space).
func encodeParams(q url.Values) string {
	return strings.ReplaceAll(q.Encode(), "+", "%20")
}

// escape is v as encodeParams writes it.
func escape(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }

// redact returns err, or, if its text holds a value of q (as given or
// escaped) or a piece of one (a driver that pastes a value into SQL may
// echo the part after a quote), an error of the same SQLite result code
// whose text has those cut out and which wraps nothing (what it would
// wrap shows them). A piece is a run of the text between spaces, quotes
// and punctuation, of at least 4 bytes, found inside a value or sharing 8
// bytes in a row with one: values and pieces shorter than that are left
// (they would cut words out of the message, and no key is that short).
func redact(err error, q url.Values) error {
	if err == nil || len(q) == 0 {
		return err
	}
	msg := err.Error()
	cut := false
	for _, vs := range q {
		for _, v := range vs {
			if len(v) < 4 {
				continue
			}
			for _, s := range []string{v, url.QueryEscape(v), escape(v), url.PathEscape(v)} {
				if strings.Contains(msg, s) {
					msg, cut = strings.ReplaceAll(msg, s, "[DBConfig.ConnParams]"), true
				}
			}
		}
	}
	pieces := strings.FieldsFunc(msg, func(r rune) bool { return strings.ContainsRune(" \t\n\"'`:;,()[]=", r) })
	for _, p := range pieces {
		if len(p) < 4 || p == "[DBConfig.ConnParams]" {
			continue
		}
		for _, vs := range q {
			if slices.ContainsFunc(vs, func(v string) bool { return shares(v, p) }) {
				msg, cut = strings.ReplaceAll(msg, p, "[DBConfig.ConnParams]"), true
				break
			}
		}
	}
	if !cut {
		return err
	}
	code, ok := sqlitecode.Of(err)
	if !ok {
		return errors.New(msg)
	}
	return &redacted{msg: msg, code: code}
}

// shares reports whether the piece p of a message is inside the value v,
// or holds 8 bytes in a row of it.
func shares(v, p string) bool {
	if strings.Contains(v, p) {
		return true
	}
	for i := 0; i+8 <= len(p); i++ {
		if strings.Contains(v, p[i:i+8]) {
			return true
		}
	}
	return false
}

// redacted is a driver's SQLite error with the connection parameters cut
// out of its text.
type redacted struct {
	msg  string
	code int // SQLite's extended result code
}

func (e *redacted) Error() string { return e.msg }

// Code is the extended result code, where sqlitecode reads it.
func (e *redacted) Code() int { return e.code }
