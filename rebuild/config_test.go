package rebuild

import (
	"context"
	"errors"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
)

func TestBadConfigAndSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := appDB(t, "a")
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE loose (id TEXT, body TEXT)`)
	for _, tc := range []struct {
		name string
		cfg  config
		want error
	}{
		{"no path", config{DBConfig: DBConfig{Driver: testdriver.Driver()}, Source: Source{}}, ErrBadConfig},
		{"table without column", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records"}}, ErrBadConfig},
		{"injection", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: `records"; DROP TABLE records; --`, Column: "id"}}, ErrBadConfig},
		{"reserved", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "sqlite_master", Column: "name"}}, ErrBadConfig},
		{"digit first", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "1records", Column: "id"}}, ErrBadConfig},
		{"space", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "my id"}}, ErrBadConfig},
		{"too long", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: string(make([]byte, 200)), Column: "id"}}, ErrBadConfig},
		{"invalid utf-8", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "rec\xffords", Column: "id"}}, ErrBadConfig},
		{"fpr", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{FPR: 1.5}}, ErrBadConfig},
		{"headroom", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Headroom: 0.5}}, ErrBadConfig},
		{"no such table", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "nope", Column: "id"}}, ErrNoSource},
		{"no such column", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "nope"}}, ErrNoSource},
		{"unindexed", config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "loose", Column: "id"}}, ErrNotIndexed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := Open(ctx, tc.cfg.DBConfig, tc.cfg.Source)
			if !errors.Is(err, tc.want) {
				if ix != nil {
					_ = ix.Close(ctx)
				}
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("records after bad configs: %d rows, %v", n, err)
	}
	ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "loose", Column: "id", AllowUnindexed: true}})
	if ok, err := ix.Fetched(ctx, "a"); err != nil || ok {
		t.Fatalf("Fetched on an empty unindexed table: %v, %v", ok, err)
	}
}
