package store

import (
	"context"
	"database/sql/driver"
	"encoding/json"
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
	ok     bool   // read for a resolved source
}

// catalogCols are the catalog's columns after the cookie: the table's
// row (type, rowid and rootpage, a newline, its CREATE text), the other
// rows, and the source's row (empty for a source without one). table and
// names (the source's log, spellings table and triggers, and the sources
// table) are SQL expressions: parameters, or literals in the probe.
func catalogCols(s *Source, table string, names [5]string) [3]string {
	cols := [3]string{`(SELECT type || ' ' || rowid || ' ' || rootpage || char(10) || coalesce(sql, '') FROM sqlite_master
		WHERE name = ` + table + ` COLLATE NOCASE AND type IN ('table', 'view') ORDER BY type = 'table' DESC LIMIT 1)`,
		`(SELECT group_concat(r, char(10)) FROM (SELECT type || ' ' || name || ' ' || tbl_name || ' ' || rowid || ' ' || rootpage || ' ' || coalesce(sql, '') AS r
		FROM sqlite_master WHERE tbl_name = ` + table + ` COLLATE NOCASE AND type IN ('index', 'trigger') OR name IN (` + strings.Join(names[:], ", ") + `)
		ORDER BY type, name))`, `''`}
	if s != nil && s.Row {
		row := `quote(id) || ' ' || quote(dataset_id) || ' ' || quote(scanned) || ' ' || quote(created_at) || ' ' || quote(tbl_rowid)`
		if s.Keyed {
			row += ` || ' ' || quote(positions_key) || ' ' || quote(lowest_version)`
		}
		cols[2] = `(SELECT ` + row + ` FROM ` + inMain(SourcesTable) + ` WHERE id = ` + strconv.FormatInt(s.ID, 10) + `)`
	}
	return cols
}

// catalogSQL returns the catalog's statement for s: ?1 the table, ?2 to
// ?6 the names of catalogCols.
func catalogSQL(s *Source) string {
	cols := catalogCols(s, "?1", [5]string{"?2", "?3", "?4", "?5", "?6"})
	return `SELECT (SELECT schema_version FROM pragma_schema_version()), ` + strings.Join(cols[:], ", ")
}

// probeCatalogSQL is s's catalog as one JSON array of catalogCols, its
// names literals: what a probe reads when the cookie moved.
func probeCatalogSQL(s *Source) string {
	lit := func(x string) string { return `'` + strings.ReplaceAll(x, `'`, `''`) + `'` }
	cols := catalogCols(s, lit(s.Table), [5]string{lit(s.Log), lit(s.Spellings), lit(s.Ins), lit(s.Upd), lit(SourcesTable)})
	return `json_array(` + strings.Join(cols[:], ", ") + `)`
}

// Catalog reads s's catalog (s resolved; nil: the cookie alone, for a
// source that did not resolve).
func (c *Conn) Catalog(ctx context.Context, s *Source) (cat Catalog, err error) {
	var table string
	names := [4]string{}
	if s != nil {
		table = s.Table
		if s.Row {
			names = [4]string{s.Log, s.Spellings, s.Ins, s.Upd}
		}
	}
	var v [4]driver.Value
	err = c.first(ctx, catalogSQL(s), v[:], arg(1, table), arg(2, names[0]), arg(3, names[1]), arg(4, names[2]), arg(5, names[3]), arg(6, SourcesTable))
	if err != nil {
		return cat, fmt.Errorf("read the catalog: %w", err)
	}
	schema, ok := v[0].(int64)
	if !ok {
		return cat, fmt.Errorf("read the catalog: schema cookie %v", v[0])
	}
	return newCatalog(s, schema, textValue(v[1]), textValue(v[2]), textValue(v[3])), nil
}

// newCatalog is the catalog of s read at cookie schema, from the values
// of catalogCols.
func newCatalog(s *Source, schema int64, table, rest, row string) Catalog {
	cat := Catalog{Schema: schema, rest: rest + "\n" + row}
	cat.table, cat.text, _ = strings.Cut(table, "\n")
	cat.ok = s != nil && cat.table != ""
	return cat
}

// readProbeCatalog reads the value of probeCatalogSQL.
func readProbeCatalog(s *Source, schema int64, v driver.Value) (Catalog, error) {
	var cols [3]*string
	if err := json.Unmarshal([]byte(textValue(v)), &cols); err != nil {
		return Catalog{}, fmt.Errorf("read the catalog: %w", err)
	}
	var text [3]string
	for i, c := range cols {
		if c != nil {
			text[i] = *c
		}
	}
	return newCatalog(s, schema, text[0], text[1], text[2]), nil
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
