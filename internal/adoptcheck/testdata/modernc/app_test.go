package app

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestSync: the README's loop on the app's own driver: the ids already
// stored are not fetched, the others are, and the next call sees them.
func TestSync(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	appDB, err := OpenApp(path)
	if err != nil {
		t.Fatal(err)
	}
	defer appDB.Close()
	if _, err := appDB.Exec(`CREATE TABLE messages (id TEXT PRIMARY KEY, body TEXT);
		INSERT INTO messages (id) VALUES ('m-1'), ('m-2')`); err != nil {
		t.Fatal(err)
	}
	got, err := Sync(ctx, appDB, path, []string{"m-1", "m-3", "m-2", "m-4"})
	if err != nil || !slices.Equal(got, []string{"m-3", "m-4"}) {
		t.Fatalf("first page: fetched %v, %v; want [m-3 m-4]", got, err)
	}
	got, err = Sync(ctx, appDB, path, []string{"m-3", "m-5"})
	if err != nil || !slices.Equal(got, []string{"m-5"}) {
		t.Fatalf("second page: fetched %v, %v; want [m-5]", got, err)
	}
}
