package testdriver

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

func init() {
	register("modernc", "pragma", &sqlite.Driver{}, func(dst any, src string) error {
		r, err := dst.(interface {
			NewRestore(string) (*sqlite.Backup, error)
		}).NewRestore(src)
		if err != nil {
			return err
		}
		if more, err := r.Step(-1); err != nil || more { // modernc: false once done
			_ = r.Finish()
			return fmt.Errorf("restore step: more %v, %v", more, err)
		}
		return r.Finish()
	})
}

// moderncCollations are the collations registered on modernc's driver of
// the name "sqlite" (once each: modernc registers them for the process).
var moderncCollations sync.Map

func init() {
	collated["modernc"] = func(name string, cmp func(a, b string) int) driver.Driver {
		if _, done := moderncCollations.LoadOrStore(name, true); !done {
			sqlite.MustRegisterCollationUtf8(name, cmp)
		}
		// The driver value registered as "sqlite": the one that has the
		// collation (an app's sql.Open("sqlite", …) hands it out).
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			panic(err)
		}
		defer db.Close()
		return db.Driver()
	}
}
