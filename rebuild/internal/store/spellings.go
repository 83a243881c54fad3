package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
)

// ScanSpellings hands every stored key holding a character outside ASCII
// or a NUL (nonASCIIKey) to fn: an ASCII string is its own NFC form, so
// only these can be stored in another spelling; SQLite filters the others
// out without handing them over. It is how an index finds stored non-NFC spellings when no
// complete spellings table vouches for them (a source never attached, or
// attached again after its triggers were lost). It reads every row of
// the table: O(rows), once per such event, on a connection of its own
// (outside the readers' pool, which calls keep meanwhile), one such scan
// at a time in the database (ctx bounds the wait for another index's), so
// that the connections beside the readers always suffice.
func (db *DB) ScanSpellings(ctx context.Context, s *Source, fn func(key string) error) error {
	select {
	case db.spellScan <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("scan stored spellings: %w", context.Cause(ctx))
	}
	defer func() { <-db.spellScan }()
	c, err := db.ownConn(ctx)
	if err != nil {
		return fmt.Errorf("scan stored spellings: %w", err)
	}
	defer c.close()
	dest := make([]driver.Value, 1)
	err = c.each(ctx, `SELECT json_quote(`+s.QCol+`) FROM `+s.QTable+` WHERE typeof(`+s.QCol+`) = 'text' AND `+nonASCIIKey(s.QCol)+
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

// AddSpellings records stored spellings that are not NFC, found by a scan
// still running (MarkScanned records the rest).
func (db *DB) AddSpellings(ctx context.Context, s *Source, epoch uint64, spellings [][2]string) error {
	if len(spellings) == 0 {
		return nil
	}
	return db.writeSpellings(ctx, s, epoch, spellings, "", 0)
}

// MarkScanned records, in one transaction with the last stored spellings
// found, that a full scan read every row committed up to gen: the spellings
// table is complete up to gen (spellings_gen). Nothing is recorded if the
// source's epoch is no longer epoch (it was attached again meanwhile: the
// scan may have missed rows).
func (db *DB) MarkScanned(ctx context.Context, s *Source, epoch, gen uint64, spellings [][2]string) error {
	return db.writeSpellings(ctx, s, epoch, spellings, `UPDATE `+SourcesTable+` SET scanned = 1, spellings_gen = max(spellings_gen, ?) WHERE id = ? AND epoch = ?`, gen)
}

// NoteSpellings records stored spellings found in the log up to gen, and
// that the spellings table is complete up to gen, if it was complete up to
// where the caller started reading (a full scan of the same epoch): the
// log before gen is then no longer needed for spellings.
func (db *DB) NoteSpellings(ctx context.Context, s *Source, epoch, gen uint64, spellings [][2]string) error {
	return db.writeSpellings(ctx, s, epoch, spellings, `UPDATE `+SourcesTable+` SET spellings_gen = max(spellings_gen, ?) WHERE id = ? AND epoch = ? AND scanned = 1`, gen)
}

func (db *DB) writeSpellings(ctx context.Context, s *Source, epoch uint64, spellings [][2]string, mark string, gen uint64) error {
	if db.w == nil {
		return fmt.Errorf("note spellings: database opened read-only")
	}
	tx, err := db.w.Begin(ctx)
	if err != nil {
		return fmt.Errorf("note spellings: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var cur int64
	if err := tx.QueryRowContext(ctx, `SELECT epoch FROM `+SourcesTable+` WHERE id = ?`, s.ID).Scan(&cur); err != nil {
		return fmt.Errorf("note spellings: %w", err)
	}
	if uint64(cur) != epoch {
		return nil // attached again meanwhile: what was read vouches for nothing
	}
	if len(spellings) > 0 {
		if err := tx.execEach(ctx, `INSERT OR IGNORE INTO `+s.Spellings+` (canon, stored) VALUES (?, ?)`, len(spellings),
			func(i int) []any { return []any{spellings[i][0], spellings[i][1]} }); err != nil {
			return fmt.Errorf("note spellings: %w", err)
		}
	}
	if mark != "" {
		if _, err := tx.ExecContext(ctx, mark, int64(gen), s.ID, int64(epoch)); err != nil {
			return fmt.Errorf("note spellings: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("note spellings: %w", err)
	}
	return nil
}
