package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Catalog is what a resolution of a source rests on, read in one
// statement with the schema cookie: the table's row, the rows of its
// indexes and triggers, of the library's objects for the source and of its
// sources table, and the source's row there.
type Catalog struct {
	Schema int64
	table  string // the table's row: type, rowid, rootpage
	text   string // its CREATE statement
	rest   string // the other rows, in order, and the source's row
	ok     bool   // read for a resolved source
}

// catalogRows reads the cookie, the table's row (type, rowid and rootpage,
// a newline, its CREATE text) and the other rows, sorted: two reads of one
// schema then agree even on connections that scan in opposite directions
// (PRAGMA reverse_unordered_selects, which an app may turn on).
const catalogRows = `SELECT (SELECT schema_version FROM pragma_schema_version()),
	(SELECT type || ' ' || rowid || ' ' || rootpage || char(10) || coalesce(sql, '') FROM main.sqlite_master
		WHERE name = ?1 COLLATE NOCASE AND type IN ('table', 'view') ORDER BY type = 'table' DESC LIMIT 1),
	(SELECT group_concat(r, char(10)) FROM (SELECT type || ' ' || name || ' ' || tbl_name || ' ' || rowid || ' ' || rootpage || ' ' || coalesce(sql, '') AS r
		FROM main.sqlite_master WHERE tbl_name = ?1 COLLATE NOCASE AND type IN ('index', 'trigger') OR name IN (?2, ?3, ?4, ?5, ?6)
		ORDER BY type, name))`

// catalogSQL returns the catalog's statement for s: with the source's row
// (every column a resolution reads) if s has one.
func catalogSQL(s *Source) string {
	if s == nil || !s.Row {
		return catalogRows + `, ''`
	}
	row := `quote(id) || ' ' || quote(dataset_id) || ' ' || quote(scanned) || ' ' || quote(created_at) || ' ' || quote(tbl_rowid)`
	if s.Keyed {
		row += ` || ' ' || quote(positions_key) || ' ' || quote(lowest_version)`
	}
	return catalogRows + `, (SELECT ` + row + ` FROM ` + inMain(SourcesTable) + ` WHERE id = ` + strconv.FormatInt(s.ID, 10) + `)`
}

// Catalog reads s's catalog (s resolved; nil: the cookie alone, for a
// source that did not resolve).
func (c *Conn) Catalog(ctx context.Context, s *Source) (cat Catalog, err error) {
	var v [4]driver.Value
	if err = c.first(ctx, catalogSQL(s), v[:], catalogArgs(s)...); err != nil {
		return cat, fmt.Errorf("read the catalog: %w", err)
	}
	return catalogOf(s, v)
}

// AppCatalog is Catalog on an idle connection of the app's pool, the one
// the pool's last statement ran on (database/sql hands out the most
// recently used): right after the app's DDL that connection holds the
// new schema, where a reader of the library parses it again first
// (docs/BENCHMARKS.md, the page after ADD COLUMN). Only a connection its
// driver reports outside any transaction reads it (mattn's AutoCommit,
// ncruces' GetAutocommit): one the app left inside a transaction would
// show DDL not committed. ok is false, with nothing read, when another
// statement of the library's runs there, no idle connection is there
// within catalogWait (err says so) or the driver does not tell; the
// caller reads on a reader then. A pool closed or locked is left as
// appRunner.left says.
func (db *DB) AppCatalog(ctx context.Context, s *Source) (cat Catalog, ok bool, err error) {
	if !db.AppFree() || !db.app.take() {
		return cat, false, nil
	}
	defer db.app.give()
	wait, cancel := context.WithTimeout(ctx, catalogWait)
	conn, err := db.app.db.Conn(wait)
	cancel()
	if err != nil {
		return cat, false, db.app.left(err)
	}
	defer conn.Close()
	outside := false
	if err := conn.Raw(func(dc any) error {
		switch c := dc.(type) {
		case interface{ AutoCommit() bool }:
			outside = c.AutoCommit()
		case interface{ GetAutocommit() bool }:
			outside = c.GetAutocommit()
		}
		return nil
	}); err != nil || !outside {
		return cat, false, db.app.left(err)
	}
	args := catalogArgs(s)
	in := make([]any, len(args))
	for i, a := range args {
		in[i] = a.Value // ?1 … ?6 in order
	}
	var v [4]any
	if err := conn.QueryRowContext(db.Driver.QueryContext(ctx), catalogSQL(s), in...).Scan(&v[0], &v[1], &v[2], &v[3]); err != nil {
		return cat, false, fmt.Errorf("read the catalog: %w", db.app.left(err))
	}
	cat, err = catalogOf(s, [4]driver.Value{v[0], v[1], v[2], v[3]})
	return cat, err == nil, err
}

// catalogWait bounds AppCatalog's wait for the connection AppFree saw
// idle, which the app may have taken meanwhile (a loaded machine can
// pause the call longer than prepareWait).
const catalogWait = 50 * time.Millisecond

// catalogArgs are the parameters of catalogSQL(s).
func catalogArgs(s *Source) []driver.NamedValue {
	var table string
	names := [4]string{}
	if s != nil {
		table = s.Table
		if s.Row {
			names = [4]string{s.Log, s.Spellings, s.Ins, s.Upd}
		}
	}
	return []driver.NamedValue{arg(1, table), arg(2, names[0]), arg(3, names[1]), arg(4, names[2]), arg(5, names[3]), arg(6, SourcesTable)}
}

// catalogOf reads catalogSQL(s)'s row.
func catalogOf(s *Source, v [4]driver.Value) (cat Catalog, err error) {
	var ok bool
	if cat.Schema, ok = v[0].(int64); !ok {
		return cat, fmt.Errorf("read the catalog: schema cookie %v", v[0])
	}
	cat.table, cat.text, _ = strings.Cut(textValue(v[1]), "\n")
	cat.rest = textValue(v[2]) + "\n" + textValue(v[3])
	cat.ok = s != nil && cat.table != ""
	return cat, nil
}

// Appended reports whether c differs from old at most by columns appended
// to the table (ALTER TABLE … ADD COLUMN inserts ", <column>" before the
// closing parenthesis of the column list): its source resolves as old's
// did. Anything else, an index, a trigger, the table's rowid or any other
// text of its CREATE statement, resolves again.
func (c Catalog) Appended(old Catalog) bool {
	if !c.ok || !old.ok || c.table != old.table || c.rest != old.rest {
		return false
	}
	if c.text == old.text {
		return true
	}
	end := strings.LastIndexByte(old.text, ')')
	if end < 0 {
		return false
	}
	head, tail := old.text[:end], old.text[end:] // tail: ")" and the table's options
	return len(c.text) > len(old.text)+1 && strings.HasPrefix(c.text, head) && strings.HasSuffix(c.text, tail) &&
		c.text[len(head)] == ',' && strings.LastIndexByte(c.text, ')') == len(c.text)-len(tail)
}
