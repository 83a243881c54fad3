package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
)

// ScanNonASCII hands every stored key holding a character outside ASCII
// or a NUL (nonASCIIKey) to fn: an ASCII string is its own NFC form, so
// only these can be stored in another spelling; SQLite filters the others
// out without handing them over. It is how an index finds stored non-NFC spellings when no
// complete alias table vouches for them (a source never attached, or
// attached again after its triggers were lost). It reads every row of
// the table: O(rows), once per such event.
func (c *Conn) ScanNonASCII(ctx context.Context, s *Source, fn func(key string) error) error {
	dest := make([]driver.Value, 1)
	err := c.each(ctx, `SELECT json_quote(`+s.QCol+`) FROM `+s.QTable+` WHERE typeof(`+s.QCol+`) = 'text' AND `+nonASCIIKey(s.QCol)+
		` AND octet_length(`+s.QCol+`) <= `+strconv.Itoa(tooLong), dest, func() error {
		js, _ := dest[0].(string)
		k, err := parseString(js)
		if err != nil {
			return err
		}
		return fn(k)
	})
	if err != nil {
		return fmt.Errorf("scan stored spellings: %w", err)
	}
	return nil
}

// InsertOwn inserts canonical keys into the library's own table, in one
// transaction on the writer.
func (db *DB) InsertOwn(ctx context.Context, s *Source, keys []string) error {
	if db.w == nil {
		return fmt.Errorf("mark fetched: database opened read-only")
	}
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO `+s.QTable+` (`+s.QCol+`) VALUES (?)`)
	if err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	defer st.Close()
	for _, k := range keys {
		if _, err := st.ExecContext(ctx, k); err != nil {
			return fmt.Errorf("mark fetched: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark fetched: %w", err)
	}
	return nil
}
