package rebuild

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSourcesRowOfAnotherType: the library's sources row holding a value
// of another type than it writes (a hand edit, a tool): a call answers
// exactly or fails with an error naming the value, never takes it for an
// integer. Then the epoch at the top of int64, a 12-step migration with
// rows stored while no trigger logs them, and a second index attaching
// the source again (epoch + 1 is a REAL in SQLite): the first index must
// not take its filter for current.
func TestSourcesRowOfAnotherType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, set := range []string{`log_floor = 2.5`, `epoch = 'x'`, `epoch = '7 7'`, `scanned = 0.25`} {
		path := modeDB(t, "WAL", []string{"records"}, ids("seed", 30)...)
		app := modeConn(t, path, "WAL")
		cfg := appConfig(path)
		cfg.knobs.noFollow = true
		ix := open(t, cfg)
		waitServing(t, ix)
		mustExec(t, app, `UPDATE syncfilter_sources SET `+set)
		insertIDs(t, app, ids("later", 5)...)
		page := append(ids("later", 5), "seed-0000001", "never")
		if _, err := ix.Missing(ctx, page); err == nil {
			judgePage(t, ix, storedCanon(t, path, "records"), page, true, set)
		} else if !strings.Contains(err.Error(), "unexpected value") {
			t.Errorf("%s: Missing = %v, want an error naming the value", set, err)
		}
	}

	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 30)...)
	app := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.knobs.noFollow = true
	a := open(t, cfg)
	waitServing(t, a)
	mustExec(t, app, `UPDATE syncfilter_sources SET epoch = 9223372036854775807`)
	_, _ = a.Missing(ctx, []string{"seed-0000001", "nope"}) // drops its filter: another epoch
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = a.Wait(wctx)
	mustExec(t, app, `CREATE TABLE records_new (id TEXT PRIMARY KEY, body TEXT)`)
	mustExec(t, app, `INSERT INTO records_new SELECT id, body FROM records`)
	mustExec(t, app, `DROP TABLE records`)
	mustExec(t, app, `ALTER TABLE records_new RENAME TO records`)
	insertIDs(t, app, ids("gap", 40)...) // in no log
	bcfg := appConfig(path)
	bcfg.Snapshot = path + ".b.sfb"
	b := open(t, bcfg) // attaches again: epoch + 1
	_ = b.Wait(wctx)
	insertIDs(t, app, ids("logged", 5)...)
	page := append(append(ids("gap", 40), ids("logged", 5)...), "nope1", "nope2")
	if _, err := a.Missing(ctx, page); err == nil {
		judgePage(t, a, storedCanon(t, path, "records"), page, true, "after another index attached again")
	} else if !strings.Contains(err.Error(), "unexpected value") {
		t.Errorf("after another index attached again: Missing = %v, want an error naming the value", err)
	}
}
