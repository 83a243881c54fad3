package rebuild_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncfilter/syncfilter/rebuild"
)

func Example() {
	dir, _ := os.MkdirTemp("", "rebuild-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The library owns the table here (Table and Column empty); see
	// Config for an app's own table.
	ix, err := rebuild.Open(ctx, rebuild.Config{
		Path:     filepath.Join(dir, "app.db"),
		Snapshot: filepath.Join(dir, "fetched.sfb"),
	})
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
	fmt.Printf("%+q\n", missing)

	ok, _ := ix.Fetched(ctx, "rec-3")
	fmt.Println("rec-3 fetched:", ok)

	st := ix.Stats()
	fmt.Println("asked", st.Queries, "confirmed", st.ConfirmedPositives)
	// Output:
	// ["rec-3" "rec-4"]
	// rec-3 fetched: false
	// asked 5 confirmed 2
}
