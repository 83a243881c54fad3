package syncbench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"
)

// A cold-start child is one fresh process: it opens the library (or
// database/sql alone), answers one page and prints a ChildReport.

// EnvT0 is the environment variable carrying the parent's start time
// (Unix nanoseconds) to a cold-start child.
const EnvT0 = "SYNCBENCH_T0"

// Child modes.
const (
	ModeLib       = "lib"        // OpenLib with the snapshot, then Missing
	ModeLibNoSnap = "lib-nosnap" // OpenLib without a snapshot (bypass), then Missing
	ModeSQL       = "sql"        // database/sql: open, prepare the IN-list, run it once
	// The app's pool shape (pool_child.go): the app opens its pool, then
	// the library answers, or the IN-list on that pool does.
	ModeLibPool = "lib-pool" // the app's pool opened, then OpenLib and Missing (lib.go)
	ModeSQLPool = "sql-pool" // the app's pool opened, then the IN-list prepared and run on it
)

// ColdBaseline returns the mode a cold-start mode is compared with.
func ColdBaseline(mode string) string {
	if mode == ModeLibPool || mode == ModeSQLPool {
		return ModeSQLPool
	}
	return ModeSQL
}

// ChildReport is what a cold-start child prints, one JSON line.
type ChildReport struct {
	Mode          string        `json:"mode"`
	Total         time.Duration `json:"total_ns"` // parent's start of the child → the answer
	Main          time.Duration `json:"main_ns"`  // parent's start of the child → ColdChild called
	Open          time.Duration `json:"open_ns"`  // Open, or sql.Open and Prepare
	First         time.Duration `json:"first_ns"` // the first Missing, or the IN-list query
	Missing       int           `json:"missing"`
	Want          int           `json:"want"`
	Serving       bool          `json:"serving"` // after the first answer, the library's filter served from the snapshot
	SnapshotError string        `json:"snapshot_error,omitempty"`
}

// ColdPage returns page seed: size ids of the rows-row RandomUUID table,
// every other one stored (drawn at random), the others new; and the new ones.
func ColdPage(rows int64, seed uint64, size int) (page, fresh []string) {
	rng := rand.New(rand.NewPCG(seed, 0xc01d))
	page = make([]string, size)
	for i := range page {
		if i%2 == 1 {
			page[i] = RandomUUID.ID(uint64(rows) + seed*uint64(size) + uint64(i))
			fresh = append(fresh, page[i])
		} else {
			page[i] = RandomUUID.ID(rng.Uint64N(uint64(rows)))
		}
	}
	return page, fresh
}

// ColdChild is a child's whole work: args are its flags (-mode, -db,
// -snap, -rows, -seed, -page); it prints a ChildReport to out.
func ColdChild(ctx context.Context, args []string, out io.Writer) error {
	t0 := time.Now()
	if s := os.Getenv(EnvT0); s != "" {
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("cold child: %s=%q: %w", EnvT0, s, err)
		}
		t0 = time.Unix(0, ns)
	}
	r := ChildReport{Main: time.Since(t0)}
	fs := flag.NewFlagSet("cold-child", flag.ContinueOnError)
	mode := fs.String("mode", ModeLib, "lib, lib-nosnap or sql")
	db := fs.String("db", "", "database path")
	snap := fs.String("snap", "", "snapshot path")
	rows := fs.Int64("rows", 0, "rows of the table")
	seed := fs.Uint64("seed", 0, "which page")
	size := fs.Int("page", 1000, "ids per page")
	driver := fs.String("driver", DefaultDriver().Name, "the app's driver (pool modes)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r.Mode = *mode
	page, want := ColdPage(*rows, *seed, *size)
	r.Want = len(want)
	var got []string
	switch *mode {
	case ModeLib, ModeLibNoSnap:
		snapshot := ""
		if *mode == ModeLib {
			snapshot = *snap
		}
		start := time.Now()
		lib, err := OpenLib(ctx, DefaultDriver(), *db, snapshot, nil)
		if err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		defer lib.Close(context.Background())
		r.Open = time.Since(start)
		call := time.Now()
		ans, took, err := lib.Missing(ctx, page)
		if err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		r.First, r.Total = took, call.Add(took).Sub(t0)
		got = missingIDs(page, ans)
		// Untimed: the snapshot loads once the first call is answered;
		// it must then serve, without a rebuild.
		if err := lib.Wait(ctx); err != nil && *mode == ModeLib {
			return fmt.Errorf("cold child: %w", err)
		}
		st := lib.Stats()
		r.Serving, r.SnapshotError = st.Serving && st.Rebuilds == 0, st.SnapshotError
	case ModeSQL:
		start := time.Now()
		l, err := OpenInList(*db)
		if err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		defer l.Close()
		if _, err := l.Prepare(ctx, len(page)); err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		r.Open = time.Since(start)
		start = time.Now()
		if got, err = l.Missing(ctx, page); err != nil {
			return fmt.Errorf("cold child: %w", err)
		}
		r.First, r.Total = time.Since(start), time.Since(t0)
	case ModeLibPool, ModeSQLPool:
		if err := poolChild(ctx, &r, t0, *driver, *db, *snap, page); err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(r)
	default:
		return fmt.Errorf("cold child: mode %q: want lib, lib-nosnap, sql, lib-pool or sql-pool", *mode)
	}
	r.Missing = len(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("cold child: %s: %d ids missing, want the %d new ones", *mode, len(got), len(want))
	}
	return json.NewEncoder(out).Encode(r)
}
