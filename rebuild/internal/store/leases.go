package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"
)

// LeaseTerm is how long a scan's lease lasts unless renewed; a crashed
// process's expires after it.
const LeaseTerm = 10 * time.Minute

// Lease is a rebuild scan's row in syncfilter_scans: while it lives,
// compaction (by any process) keeps every log entry after its generation,
// and Detach refuses to pull the source from under the scan.
type Lease struct {
	token   [16]byte
	renewed time.Time
}

// TakeLease registers a scan about to start, at the log's current head
// (the scan's own generation, read later, is at least that).
func (db *DB) TakeLease(ctx context.Context, s *Source) (*Lease, error) {
	l := &Lease{renewed: time.Now()}
	_, _ = rand.Read(l.token[:])
	err := db.update(ctx, "take scan lease", func(tx *Tx) error {
		return tx.exec(`INSERT INTO `+ScansTable+` (source, token, generation, expires)
		VALUES (?, ?, (SELECT coalesce(max(seq), 0) FROM `+s.Log+`), ?)`, s.ID, l.token[:], time.Now().Add(db.knobs.LeaseTerm).Unix())
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// RenewLease extends a lease held longer than a tenth of its term.
func (db *DB) RenewLease(ctx context.Context, s *Source, l *Lease) error {
	if time.Since(l.renewed) < db.knobs.LeaseTerm/10 {
		return nil
	}
	prev := l.renewed
	l.renewed = time.Now()
	err := db.update(ctx, "renew scan lease", func(tx *Tx) error {
		return tx.exec(`UPDATE `+ScansTable+` SET expires = ? WHERE source = ? AND token = ?`, time.Now().Add(db.knobs.LeaseTerm).Unix(), s.ID, l.token[:])
	})
	if LockHeld(err) && time.Since(prev) < db.knobs.LeaseTerm/2 {
		l.renewed = prev // the app held the write lock: the next chunk tries again, the lease still runs
		return nil
	}
	return err
}

// ReleaseLease ends a scan's hold (and sweeps expired leases).
func (db *DB) ReleaseLease(ctx context.Context, s *Source, l *Lease) {
	_ = db.update(context.WithoutCancel(ctx), "release scan lease", func(tx *Tx) error {
		return tx.exec(`DELETE FROM `+ScansTable+` WHERE (source = ? AND token = ?) OR expires < ?`, s.ID, l.token[:], time.Now().Unix())
	})
}

// leasesOf describes the live scan leases of a source.
func leasesOf(ctx context.Context, q querier, id int64) ([]string, error) {
	if exists, err := hasTable(ctx, q, ScansTable); err != nil || !exists {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT expires FROM `+ScansTable+` WHERE source = ? AND expires >= ?`, id, time.Now().Unix())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var exp int64
		if err := rows.Scan(&exp); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("a rebuild scan (until %s unless renewed)", time.Unix(exp, 0).UTC().Format(time.RFC3339)))
	}
	return out, rows.Err()
}
