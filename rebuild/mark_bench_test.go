package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
)

// BenchmarkMarkBuys stores a page of 100 new records per op through
// Update, with and without passing their ids to mark, then asks Missing
// about the page (the next sync step): what marking saves, or costs.
//
//	go test -run '^$' -bench MarkBuys -benchmem -count 6 ./rebuild
func BenchmarkMarkBuys(b *testing.B) {
	for _, marking := range []bool{true, false} {
		b.Run(fmt.Sprintf("mark=%v", marking), func(b *testing.B) {
			path := appDB(b, ids("seed", 10_000)...)
			cfg := appConfig(path)
			cfg.NoAutoRebuild = true
			ix := open(b, cfg)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				page := ids(fmt.Sprintf("p%07d", i), 100)
				err := ix.Update(ctx, func(tx *sql.Tx, mark func(...string) error) error {
					if marking {
						if err := mark(page...); err != nil {
							return err
						}
					}
					st, err := tx.Prepare(`INSERT INTO records (id) VALUES (?)`)
					if err != nil {
						return err
					}
					defer st.Close()
					for _, id := range page {
						if _, err := st.Exec(id); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if missing, err := ix.Missing(ctx, page); err != nil || len(missing) != 0 {
					b.Fatal(len(missing), err)
				}
			}
		})
	}
}
