package rebuild

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
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
	if err := testdriver.Restore(ctx, dc, src); err != nil {
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
	t.Parallel()
	for _, mode := range []string{"WAL", "DELETE"} {
		for _, after := range []int{10, 80} {
			t.Run(fmt.Sprintf("%s/%d rows after", mode, after), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				path := modeDB(t, mode, []string{"records"}, ids("old", 100)...)
				app := modeConn(t, path, mode)
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

// TestRestoreThenCompaction: a backup restored in place, rows written
// after it, then the log compacted (the cron job, LogRetain 1), all
// before any call looked: the entries logged after the restore under
// numbers the filter had passed are gone, so the filter cannot be
// checked against them and is dropped; every answer is the table's.
func TestRestoreThenCompaction(t *testing.T) {
	t.Parallel()
	for _, after := range []int{10, 51, 80} {
		t.Run(fmt.Sprintf("%d rows after", after), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := modeDB(t, "WAL", []string{"records"}, ids("old", 100)...)
			app := modeConn(t, path, "WAL")
			ix := open(t, appConfig(path))
			waitServing(t, ix)
			backup := path + ".bak"
			restoreInto(t, backup, path, "WAL")
			insertInto(t, app, "records", ids("later", 50)...)
			expect(t, ix, set(ids("old", 100), ids("later", 50)), []string{"later-0000049", "x"})

			restoreInto(t, path, backup, "WAL")
			insertInto(t, app, "records", ids("after", after)...)
			if _, err := BuildSnapshot(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: path + ".cron.sfb", LogRetain: 1}); err != nil {
				t.Fatal(err)
			}
			probe := append(append(ids("after", after), ids("later", 50)...), "old-0000001", "x")
			expect(t, ix, set(ids("old", 100), ids("after", after)), probe)
		})
	}
}

// TestRestoreFromAnotherDatabase: another database's content, attached by
// the library there too (the same source row and epoch, its own dataset,
// rows stored before its attach that its log never held), restored into
// the file, its log compacted or not: the filter of this one is not
// taken for it.
func TestRestoreFromAnotherDatabase(t *testing.T) {
	t.Parallel()
	for _, compacted := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted %v", compacted), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			path, other := dir+"/app.db", dir+"/other.db"
			for _, p := range []string{path, other} {
				db := modeConn(t, p, "WAL")
				mustExec(t, db, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
				insertInto(t, db, "records", ids("base-"+filepath.Base(p), 100)...)
			}
			ix := open(t, appConfig(path))
			waitServing(t, ix)
			insertInto(t, modeConn(t, path, "WAL"), "records", ids("mine", 50)...)
			expect(t, ix, set(ids("base-app.db", 100), ids("mine", 50)), []string{"mine-0000049", "x"})
			// The other database: attached, then 60 rows logged (its head
			// past this filter's generation), compacted to one entry or not.
			cfg := config{DBConfig: DBConfig{Path: other, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: other + ".sfb"}}
			if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
				t.Fatal(err)
			}
			insertInto(t, modeConn(t, other, "WAL"), "records", ids("theirs", 60)...)
			if compacted {
				cfg.LogRetain = 1
				if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); err != nil {
					t.Fatal(err)
				}
			}
			restoreInto(t, path, other, "WAL")
			probe := append(append(ids("theirs", 60), ids("mine", 50)...), "base-other.db-0000001", "base-app.db-0000001")
			expect(t, ix, set(ids("base-other.db", 100), ids("theirs", 60)), probe)
		})
	}
}
