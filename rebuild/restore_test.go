package rebuild

import (
	"context"
	"fmt"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// restoreInto copies src over dst with SQLite's backup API, as `sqlite3
// app.db ".restore backup.db"` does: dst's file stays, its content is
// replaced and its schema cookie changes.
func restoreInto(t *testing.T, dst, src, mode string) {
	t.Helper()
	ctx := context.Background()
	dc, err := modeConn(t, dst, mode).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	sc, err := modeConn(t, src, mode).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	err = dc.Raw(func(d any) error {
		return sc.Raw(func(s any) error {
			b, err := d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
			if err != nil {
				return err
			}
			if done, err := b.Step(-1); err != nil || !done {
				return fmt.Errorf("backup step: done %v, %v", done, err)
			}
			return b.Finish()
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestoreInPlace: the app restores a backup into its database while
// an index is open, then stores new rows, which the log numbers again
// from the backup's head, below what the filter already took. Whether
// the app stores fewer rows than the filter was ahead (the head went
// back) or more (the log went on past it) before the next call, every
// answer after the restore is the restored table's, in WAL and in a
// rollback-journal mode.
func TestRestoreInPlace(t *testing.T) {
	for _, mode := range []string{"WAL", "DELETE"} {
		for _, after := range []int{10, 80} {
			t.Run(fmt.Sprintf("%s/%d rows after", mode, after), func(t *testing.T) {
				ctx := context.Background()
				path := t.TempDir() + "/app.db"
				app := modeConn(t, path, mode)
				mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
				insertInto(t, app, "records", ids("old", 100)...)
				ix := open(t, appConfig(path))
				waitServing(t, ix)
				backup := path + ".bak"
				restoreInto(t, backup, path, mode) // the backup, taken now
				insertInto(t, app, "records", ids("later", 50)...)
				expect(t, ix, set(ids("old", 100), ids("later", 50)), append(ids("later", 50), "old-0000001", "x"))

				restoreInto(t, path, backup, mode)
				insertInto(t, app, "records", ids("after", after)...)
				probe := append(append(ids("after", after), ids("later", 50)...), "old-0000001", "x")
				expect(t, ix, set(ids("old", 100), ids("after", after)), probe)
				if err := ix.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				waitServing(t, ix)
				expect(t, ix, set(ids("old", 100), ids("after", after)), probe)
			})
		}
	}
}
