package testdriver

import (
	"fmt"

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
