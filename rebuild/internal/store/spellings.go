package store

import (
	"context"
	"fmt"
	"strconv"
)

// ScanSpellings hands fn every stored key that nonASCIIKey selects (an
// ASCII string is its own NFC form): how an index finds stored non-NFC
// spellings when no complete spellings table vouches for them. It reads
// every row, on a connection of its own, one such scan at a time in the
// database (the spellScan token), so that ownConns always suffice.
func (db *DB) ScanSpellings(ctx context.Context, s *Source, fn func(key string) error) error {
	select {
	case db.spellScan <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("scan stored spellings: %w", context.Cause(ctx))
	}
	defer func() { <-db.spellScan }()
	c, err := db.ownConn(ctx)
	if err == nil {
		defer c.close()
		err = c.eachKey(ctx, s, `SELECT `+s.quote(s.QCol)+` FROM `+s.QTable+` WHERE typeof(`+s.QCol+`) = 'text' AND `+s.nonASCIIKey(s.QCol)+
			` AND `+s.octets(s.QCol)+` <= `+strconv.Itoa(MaxStoredBytes), func(k string, _ bool) error { return fn(k) })
	}
	if err != nil {
		return fmt.Errorf("scan stored spellings: %w", err)
	}
	return nil
}

// AddSpellings records stored non-NFC spellings found by a scan still
// running (MarkScanned records the rest).
func (db *DB) AddSpellings(ctx context.Context, s *Source, epoch uint64, spellings [][2]string) error {
	if len(spellings) == 0 {
		return nil
	}
	return db.writeSpellings(ctx, s, epoch, spellings, "", 0)
}

// MarkScanned records, with the last spellings found, that a full scan read
// every row committed up to gen: the spellings table is complete up to gen.
func (db *DB) MarkScanned(ctx context.Context, s *Source, epoch, gen uint64, spellings [][2]string) error {
	return db.writeSpellings(ctx, s, epoch, spellings, `UPDATE `+SourcesTable+` SET scanned = 1, spellings_gen = max(spellings_gen, ?) WHERE id = ? AND epoch = ?`, gen)
}

// NoteSpellings records spellings found in the log up to gen, and that
// the table is complete up to gen if a full scan of the epoch completed
// (the log before gen is then no longer needed for spellings).
func (db *DB) NoteSpellings(ctx context.Context, s *Source, epoch, gen uint64, spellings [][2]string) error {
	return db.writeSpellings(ctx, s, epoch, spellings, `UPDATE `+SourcesTable+` SET spellings_gen = max(spellings_gen, ?) WHERE id = ? AND epoch = ? AND scanned = 1`, gen)
}

// writeSpellings inserts spellings and runs mark with gen, unless the
// source was attached again since epoch (what was read vouches for nothing).
func (db *DB) writeSpellings(ctx context.Context, s *Source, epoch uint64, spellings [][2]string, mark string, gen uint64) error {
	return db.update(ctx, "note spellings", func(tx *Tx) error {
		var cur int64
		err := tx.QueryRowContext(ctx, `SELECT epoch FROM `+SourcesTable+` WHERE id = ?`, s.ID).Scan(&cur)
		if err != nil || uint64(cur) != epoch {
			return err
		}
		if len(spellings) > 0 {
			err = tx.execEach(`INSERT OR IGNORE INTO `+s.Spellings+` (canon, stored) VALUES (?, ?)`, len(spellings),
				func(i int) []any { return []any{spellings[i][0], spellings[i][1]} })
		}
		if err == nil && mark != "" {
			err = tx.exec(mark, int64(gen), s.ID, int64(epoch))
		}
		return err
	})
}

// InsertOwn inserts canonical keys into the library's own table.
func (db *DB) InsertOwn(ctx context.Context, s *Source, keys []string) error {
	return db.update(ctx, "mark fetched", func(tx *Tx) error {
		return tx.execEach(`INSERT OR IGNORE INTO `+s.QTable+` (`+s.QCol+`) VALUES (?)`, len(keys),
			func(i int) []any { return []any{keys[i]} })
	})
}
