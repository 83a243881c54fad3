package rebuild_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncfilter/syncfilter/rebuild"
)

// Need runs the loop of an engine whose server lists (id, version): a
// record updated on the server since the app stored it is fetched again
// and updated, a new one fetched and inserted, the others skipped. The
// versions here are integers (an INTEGER column); a TEXT column takes
// strings of one fixed width.
func ExampleIndex_Need() {
	dir, _ := os.MkdirTemp("", "need-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	path := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (id TEXT PRIMARY KEY, rev INTEGER NOT NULL, body TEXT);
		INSERT INTO notes VALUES ('n-1', 3, 'a'), ('n-2', 7, 'b')`); err != nil {
		panic(err)
	}
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: path, DB: db},
		rebuild.Source{Table: "notes", Column: "id", Version: "rev", Snapshot: filepath.Join(dir, "notes.sfb")})
	if err != nil {
		panic(err)
	}
	defer ix.Close(ctx)

	// The server's page: n-1 was edited (rev 4), n-2 is as stored, n-3 is new.
	page := []rebuild.Item{{ID: "n-1", Version: 4}, {ID: "n-2", Version: 7}, {ID: "n-3", Version: 1}}
	verdicts, err := ix.Need(ctx, page)
	if err != nil {
		panic(err) // an *InvalidKeysError is a partial answer, as Missing's
	}
	for i, it := range page {
		switch verdicts[i] {
		case rebuild.NeedNew:
			fmt.Printf("%s: fetch and insert\n", it.ID)
			_, err = db.ExecContext(ctx, `INSERT INTO notes VALUES (?, ?, 'fetched')`, it.ID, it.Version)
		case rebuild.NeedUpdate:
			fmt.Printf("%s: fetch and update\n", it.ID)
			_, err = db.ExecContext(ctx, `UPDATE notes SET rev = ?, body = 'fetched' WHERE id = ?`, it.Version, it.ID)
		case rebuild.Have:
			fmt.Printf("%s: up to date\n", it.ID)
		}
		if err != nil {
			panic(err)
		}
	}
	verdicts, _ = ix.Need(ctx, page) // the same page again: nothing to fetch
	fmt.Println(verdicts)
	// Output:
	// n-1: fetch and update
	// n-2: up to date
	// n-3: fetch and insert
	// [have have have]
}
