package rebuild_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncfilter/syncfilter/rebuild"
)

func Example() {
	dir, _ := os.MkdirTemp("", "rebuild-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The library opens the database through the app's SQLite driver
	// (DBConfig.Driver): here the one registered as "sqlite3". It owns
	// the table here (Table and Column empty); see Source for an app's
	// own table.
	app, err := sql.Open("sqlite3", "")
	if err != nil {
		panic(err)
	}
	ix, err := rebuild.Open(ctx,
		rebuild.DBConfig{Path: filepath.Join(dir, "app.db"), Driver: app.Driver()},
		rebuild.Source{Snapshot: filepath.Join(dir, "fetched.sfb")})
	if err != nil {
		panic(err)
	}
	defer ix.Close(ctx)

	// The sync engine fetched two records: mark them.
	if err := ix.MarkFetched(ctx, "rec-1", "caf\u00e9-2"); err != nil {
		panic(err)
	}

	// The server lists a page of ids: which still need fetching?
	page := []string{"rec-1", "rec-3", "cafe\u0301-2", "rec-4"}
	missing, err := ix.Missing(ctx, page)
	if err != nil {
		panic(err)
	}
	for i, id := range page {
		if missing[i] {
			fmt.Printf("fetch %+q\n", id)
		}
	}

	ok, _ := ix.Fetched(ctx, "rec-3")
	fmt.Println("rec-3 fetched:", ok)

	st := ix.Stats()
	fmt.Println("asked", st.Queries, "confirmed", st.ConfirmedPositives)
	// Output:
	// fetch "rec-3"
	// fetch "rec-4"
	// rec-3 fetched: false
	// asked 5 confirmed 2
}
