package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
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
	src    *Source
	ok     bool // read for a resolved source
}

// catalogCols are the expressions of s's catalog after the cookie: the
// table's row (type, rowid and rootpage, a newline, its CREATE text), the
// rows of its indexes and triggers and of the library's objects, and the
// source's row (every column a resolution reads) if s has one. The names
// are literals, so that a probe can carry them (probeSQL).
func catalogCols(s *Source) [3]string {
	var table string
	names := [4]string{}
	if s != nil {
		table = s.Table
		if s.Row {
			names = [4]string{s.Log, s.Spellings, s.Ins, s.Upd}
		}
	}
	tbl, in := textLiteral(table), ""
	for _, n := range append(names[:], SourcesTable) {
		in += textLiteral(n) + `, `
	}
	cols := [3]string{
		`(SELECT type || ' ' || rowid || ' ' || rootpage || char(10) || coalesce(sql, '') FROM sqlite_master
		WHERE name = ` + tbl + ` COLLATE NOCASE AND type IN ('table', 'view') ORDER BY type = 'table' DESC LIMIT 1)`,
		`(SELECT group_concat(r, char(10)) FROM (SELECT type || ' ' || name || ' ' || tbl_name || ' ' || rowid || ' ' || rootpage || ' ' || coalesce(sql, '') AS r
		FROM sqlite_master WHERE tbl_name = ` + tbl + ` COLLATE NOCASE AND type IN ('index', 'trigger') OR name IN (` + strings.TrimSuffix(in, `, `) + `)
		ORDER BY type, name))`,
		`''`,
	}
	if s != nil && s.Row {
		row := `quote(id) || ' ' || quote(dataset_id) || ' ' || quote(scanned) || ' ' || quote(created_at) || ' ' || quote(tbl_rowid)`
		if s.Keyed {
			row += ` || ' ' || quote(positions_key) || ' ' || quote(lowest_version)`
		}
		cols[2] = `(SELECT ` + row + ` FROM ` + SourcesTable + ` WHERE id = ` + strconv.FormatInt(s.ID, 10) + `)`
	}
	return cols
}

// textLiteral is v as an SQL string literal.
func textLiteral(v string) string { return `'` + strings.ReplaceAll(v, `'`, `''`) + `'` }

// Catalog reads s's catalog (s resolved; nil: the cookie alone, for a
// source that did not resolve).
func (c *Conn) Catalog(ctx context.Context, s *Source) (cat Catalog, err error) {
	cols := catalogCols(s)
	var v [4]driver.Value
	if err = c.first(ctx, `SELECT (SELECT schema_version FROM pragma_schema_version()), `+strings.Join(cols[:], `, `), v[:]); err != nil {
		return cat, fmt.Errorf("read the catalog: %w", err)
	}
	var ok bool
	if cat.Schema, ok = v[0].(int64); !ok {
		return cat, fmt.Errorf("read the catalog: schema cookie %v", v[0])
	}
	cat.read(s, v[1:])
	return cat, nil
}

// read sets the catalog of s from the values of catalogCols.
func (c *Catalog) read(s *Source, v []driver.Value) {
	c.table, c.text, _ = strings.Cut(textValue(v[0]), "\n")
	c.rest = textValue(v[1]) + "\n" + textValue(v[2])
	c.src = s
	c.ok = s != nil && c.table != ""
}

// Of reports whether c was read for s.
func (c Catalog) Of(s *Source) bool { return c.ok && c.src == s }

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
