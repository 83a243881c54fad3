package rebuild

import (
	"context"
	"testing"
	"time"
)

// TestConfirmOnTheAppsPool: with the app's *sql.DB handed over
// (DBConfig.DB), answers are exact, including rows the app just
// committed on that pool, and a call made while the app holds its pool's
// only connection (Missing inside the app's own transaction) does not
// wait for it: the library's reader confirms instead.
func TestConfirmOnTheAppsPool(t *testing.T) {
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 2000)...)
	app := modeConn(t, path, "WAL")
	app.SetMaxOpenConns(1)
	cfg := appConfig(path)
	cfg.DB, cfg.Driver = app, nil
	ix := open(t, cfg)
	insertInto(t, app, "records", ids("later", 300)...)
	expect(t, ix, set(ids("seed", 2000), ids("later", 300)), append(append(ids("seed", 50), ids("later", 50)...), ids("never", 50)...))
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	done := make(chan error, 1)
	go func() {
		got, err := missingList(ctx, ix, append(ids("seed", 20), "never"))
		if err == nil && (len(got) != 1 || got[0] != "never") {
			t.Errorf("Missing inside the app's transaction = %q", got)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(callBound):
		t.Fatal("Missing waited for the connection the app's transaction holds")
	}
}

// TestCallOnTheAppsPoolTakesNoReader: a page confirmed on the app's pool
// takes none of the library's reading connections, so a call never waits
// for one that a long read of the library holds meanwhile (here every
// reader is held).
func TestCallOnTheAppsPoolTakesNoReader(t *testing.T) {
	ctx := context.Background()
	path := modeDB(t, "WAL", []string{"records"}, ids("seed", 500)...)
	app := modeConn(t, path, "WAL")
	cfg := appConfig(path)
	cfg.DB, cfg.Driver, cfg.Readers = app, nil, 1
	ix := open(t, cfg)
	insertInto(t, app, "records", ids("later", 20)...)
	f := ix.db.cur.Load()
	held, err := f.st.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.st.Release(held)
	done := make(chan error, 1)
	go func() {
		got, err := missingList(ctx, ix, append(append(ids("seed", 20), ids("later", 20)...), "never"))
		if err == nil && (len(got) != 1 || got[0] != "never") {
			t.Errorf("Missing = %q, want [never]", got)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(callBound):
		t.Fatal("Missing on the app's pool waited for the library's reading connection")
	}
}
