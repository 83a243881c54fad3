// Package app is a sync engine on github.com/mattn/go-sqlite3 that adopts
// the library as README.md shows: its own *sql.DB, handed to the library.
package app

import (
	"context"
	"database/sql"

	_ "github.com/mattn/go-sqlite3"
	"github.com/syncfilter/syncfilter/rebuild"
)

// OpenApp opens the app's database with its own driver, as the app always
// did.
func OpenApp(path string) (*sql.DB, error) {
	return sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL")
}

// Sync stores the ids of page that the index says are missing, and
// returns them.
func Sync(ctx context.Context, appDB *sql.DB, path string, page []string) ([]string, error) {
	ix, err := rebuild.Open(ctx, rebuild.DBConfig{Path: path, DB: appDB},
		rebuild.Source{Table: "messages", Column: "id", Snapshot: path + ".messages.id.sfb"})
	if err != nil {
		return nil, err
	}
	defer ix.Close(ctx)
	missing, err := ix.Missing(ctx, page)
	if err != nil {
		return nil, err
	}
	var fetched []string
	for i, id := range page {
		if missing[i] { // not fetched: fetch it, and store it as the app always did
			if _, err := appDB.ExecContext(ctx, `INSERT INTO messages (id, body) VALUES (?, ?)`, id, "body of "+id); err != nil {
				return nil, err
			}
			fetched = append(fetched, id)
		}
	}
	return fetched, nil
}
