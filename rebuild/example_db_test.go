package rebuild_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/syncfilter/syncfilter/rebuild"
	_ "modernc.org/sqlite" // the app's SQLite in ExampleDBConfig_modernc
)

// A sync engine keeps several collections in one database: it opens the
// database once, handing the library its own *sql.DB (the library takes
// its driver, so the process holds one SQLite), and takes each
// collection's index from it. It stores fetched records as it always
// did; the next call sees them.
func ExampleDB_Index() {
	dir, _ := os.MkdirTemp("", "db-index-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "app.db")

	// The app's own database and connections.
	appDB, err := sql.Open("sqlite3", path)
	if err != nil {
		panic(err)
	}
	defer appDB.Close()
	if _, err := appDB.Exec(`CREATE TABLE messages (id TEXT PRIMARY KEY, body TEXT);
		INSERT INTO messages (id) VALUES ('m-1'), ('m-2')`); err != nil {
		panic(err)
	}

	db, err := rebuild.OpenDB(ctx, rebuild.DBConfig{Path: path, DB: appDB})
	if err != nil {
		panic(err)
	}
	defer db.Close(ctx) // closes every index too
	messages, err := db.Index(ctx, rebuild.Source{Table: "messages", Column: "id",
		Snapshot: path + ".messages.id.sfb"})
	if err != nil {
		panic(err)
	}

	page := []string{"m-1", "m-3", "m-2", "m-4"} // a page of the server's ids
	missing, err := messages.Missing(ctx, page)
	if err != nil {
		panic(err)
	}
	for i, id := range page {
		if missing[i] { // not fetched: fetch it, and store it as the app always did
			fmt.Println("fetch", id)
			if _, err := appDB.ExecContext(ctx, `INSERT INTO messages (id, body) VALUES (?, ?)`, id, "body of "+id); err != nil {
				panic(err)
			}
		}
	}

	missing, err = messages.Missing(ctx, []string{"m-3", "m-5"})
	fmt.Println(missing, err)
	// Output:
	// fetch m-3
	// fetch m-4
	// [false true] <nil>
}

// An app on modernc.org/sqlite passes its *sql.DB (or its driver,
// Driver: &sqlite.Driver{}): the library then opens its connections
// through the same SQLite copy. The app's own connections need a busy
// timeout, which modernc leaves at 0: the library's writes take the write
// lock briefly.
func ExampleDBConfig_modernc() {
	dir, _ := os.MkdirTemp("", "modernc-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "app.db")

	appDB, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		panic(err)
	}
	defer appDB.Close()
	if _, err := appDB.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT);
		INSERT INTO records (id) VALUES ('rec-1')`); err != nil {
		panic(err)
	}

	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: path, DB: appDB},
		rebuild.Source{Table: "records", Column: "id", Snapshot: path + ".records.sfb"})
	if err != nil {
		panic(err)
	}
	defer ix.Close(ctx)
	missing, err := ix.Missing(ctx, []string{"rec-1", "rec-2"})
	fmt.Println(missing, err)
	// Output:
	// [false true] <nil>
}

// The sizing and rebuild settings of a collection; zero values take the
// defaults. The filter is sized for the table's rows × Headroom.
func ExampleSource() {
	dir, _ := os.MkdirTemp("", "source-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "app.db")
	appDB, err := sql.Open("sqlite3", path)
	if err != nil {
		panic(err)
	}
	defer appDB.Close()
	if _, err := appDB.Exec(`CREATE TABLE messages (id TEXT PRIMARY KEY, body TEXT);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
		INSERT INTO messages (id) SELECT 'm-' || i FROM n`); err != nil {
		panic(err)
	}
	src := rebuild.Source{
		Table: "messages", Column: "id", Snapshot: path + ".sfb",
		FPR:           0.01,      // target false-positive rate (default 1%)
		Headroom:      3,         // size for rows × Headroom (default 2)
		RebuildFactor: 2,         // due when the estimated rate exceeds FPR × RebuildFactor (default 2, at least 1; NotWhenDue turns it off)
		RebuildEvery:  time.Hour, // least time between two automatic rebuilds (default: the cost limit alone)
		// NoAutoRebuild: true    // never rebuild by itself: call Rebuild, or run the cron job
	}
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: path, DB: appDB}, src)
	if err != nil {
		panic(err)
	}
	defer ix.Close(ctx)
	if err := ix.Wait(ctx); err != nil {
		panic(err)
	}
	st := ix.Stats()
	fmt.Println(st.Items, "ids, sized for", st.Capacity)
	// Output:
	// 1000 ids, sized for 3000
}
