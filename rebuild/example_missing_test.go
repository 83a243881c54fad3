package rebuild_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncfilter/syncfilter/rebuild"
)

// Missing answers a page with an invalid id (here not valid UTF-8) in
// part: every valid id is answered, the invalid ones are answered missing
// (never fetched), and the error, an *InvalidKeysError, says which. A plain `if err != nil { return err }` would drop the whole
// page, and the same page, retried, fails again: skip the invalid ids
// and go on.
func ExampleIndex_Missing_invalidKeys() {
	dir, _ := os.MkdirTemp("", "missing-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The app's database, written by the app on its own connection.
	path := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT);
		INSERT INTO records (id) VALUES ('rec-1'), ('rec-2')`); err != nil {
		panic(err)
	}

	ix, err := rebuild.Open(ctx,
		rebuild.DBConfig{Path: path, Driver: db.Driver()}, // the app's own SQLite
		rebuild.Source{Table: "records", Column: "id", Snapshot: filepath.Join(dir, "records.sfb")})
	if err != nil {
		panic(err)
	}
	defer ix.Close(ctx)

	page := []string{"rec-1", "rec-3", "bad-\xff", "rec-2", "rec-4"}
	missing, err := ix.Missing(ctx, page)
	var invalid *rebuild.InvalidKeysError
	switch {
	case errors.As(err, &invalid):
		// A partial result: log the invalid ids and leave them out;
		// they could never be stored anyway.
		for _, k := range invalid.Keys {
			fmt.Printf("skipping id %d of the page: %v\n", k.Index, k.Err)
			missing[k.Index] = false
		}
	case err != nil:
		panic(err) // nothing was answered: retry the page later
	}
	for i, id := range page {
		if missing[i] {
			fmt.Printf("fetch %q\n", id)
		}
	}
	// Output:
	// skipping id 2 of the page: normalize key: invalid UTF-8 at byte offset 4
	// fetch "rec-3"
	// fetch "rec-4"
}
