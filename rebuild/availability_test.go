package rebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"

	"github.com/syncfilter/syncfilter/snapshot"
)

// Availability: Open never fails because of the snapshot file, and a
// first attach that does not complete leaves nothing behind.

// TestForeignSnapshotAtOpen: the app cleared its data (deleted the
// database and created it again) and the snapshot of the old dataset
// survived at the snapshot path. Open and Close succeed, every answer is
// exact, Stats.SnapshotError says why the file is neither used nor
// replaced, and the file is left as it was; with ReplaceForeignFile the
// index replaces it and the next open loads it. The same holds for a
// read-only open and for the snapshot of another database.
func TestForeignSnapshotAtOpen(t *testing.T) {
	ctx := context.Background()
	path := driftDB(t, "WAL", ids("old", 300))
	cfg := appConfig(path)
	first := open(t, cfg)
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Clear data: the database goes, the snapshot stays.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	app := modeConn(t, path, "WAL")
	mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	insertIDs(t, app, ids("new", 200)...)
	foreign := fileSum(t, cfg.Snapshot)
	probe := slices.Concat(ids("old", 300), ids("new", 200), ids("later", 20), ids("never", 100))

	for round := range 2 { // the second open finds the same file again
		ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
		if err != nil {
			t.Fatalf("round %d: Open with a foreign snapshot: %v", round, err)
		}
		exact(t, ix, tableIDs(t, path, "records"), probe) // SQLite answers until the filter is ready
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if st := ix.Stats(); st.SnapshotError == nil {
			t.Fatalf("round %d: no SnapshotError for another dataset's snapshot", round)
		}
		exact(t, ix, tableIDs(t, path, "records"), probe)
		waitServing(t, ix)
		insertIDs(t, app, fmt.Sprintf("later-%07d", round))
		exact(t, ix, tableIDs(t, path, "records"), probe)
		if err := ix.Save(ctx); !errors.Is(err, ErrUnsafeTarget) {
			t.Fatalf("round %d: Save over another dataset's snapshot = %v, want ErrUnsafeTarget", round, err)
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatalf("round %d: Close with a foreign snapshot: %v", round, err)
		}
		if fileSum(t, cfg.Snapshot) != foreign {
			t.Fatalf("round %d: the other dataset's snapshot was replaced", round)
		}
	}
	ro := cfg
	ro.ReadOnly = true
	roIx := open(t, ro)
	if roIx.Stats().SnapshotError == nil {
		t.Fatal("read-only: no SnapshotError")
	}
	exact(t, roIx, tableIDs(t, path, "records"), probe)
	if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, ErrUnsafeTarget) {
		t.Fatalf("BuildSnapshot over another dataset's snapshot = %v, want ErrUnsafeTarget", err)
	}

	// The app says the file may go.
	force := cfg
	force.ReplaceForeignFile = true
	ix := open(t, force)
	waitServing(t, ix)
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, cfg.Snapshot) == foreign {
		t.Fatal("ReplaceForeignFile: the file was not replaced")
	}
	again := open(t, cfg)
	if st := again.Stats(); !st.Serving || st.SnapshotError != nil {
		t.Fatalf("after the replacement: serving %v, snapshot error %v", st.Serving, st.SnapshotError)
	}
	exact(t, again, tableIDs(t, path, "records"), probe)

	// Another database's snapshot at the path, and damaged files.
	other := driftDB(t, "DELETE", ids("other", 50))
	otherCfg := appConfig(other)
	oix := open(t, otherCfg)
	if err := oix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	otherSnap, _ := os.ReadFile(otherCfg.Snapshot)
	for name, content := range map[string][]byte{
		"another database's": otherSnap,
		"truncated":          otherSnap[:len(otherSnap)/2],
		"magic only":         snapshot.Magic[:],
		"not a snapshot":     []byte("notes\n"),
		"empty":              nil,
	} {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.Snapshot = filepath.Join(t.TempDir(), "s.sfb")
			if err := os.WriteFile(c.Snapshot, content, 0o600); err != nil {
				t.Fatal(err)
			}
			ix, err := Open(ctx, c.DBConfig, c.Source)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			exact(t, ix, tableIDs(t, path, "records"), probe)
			if err := ix.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if ix.Stats().SnapshotError == nil {
				t.Fatal("no SnapshotError")
			}
			if err := ix.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

func init() {
	// firstattach: path, how ("open" or "build"). The first attach of the
	// source, under signal.NotifyContext(SIGINT, SIGTERM): in the middle
	// of the scan, it says so on stdout and waits until a signal ends the
	// context. The app (open) waits for its filter (Wait) and, once
	// interrupted, closes the index.
	childActs["firstattach"] = func(t *testing.T, args []string) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		path, how := args[0], args[1]
		var once sync.Once
		cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver(), knobs: knobs{store: store.Knobs{ScanChunk: 500}, scanRow: func(n int64) error {
			if n >= 2500 {
				once.Do(func() {
					fmt.Printf("progress %d of 5000\n", n)
					select {
					case <-ctx.Done():
					case <-time.After(60 * time.Second):
					}
				})
			}
			return context.Cause(ctx) // interrupted: the scan stops here
		}}}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}}
		var err error
		if how == "open" {
			var ix *Index
			if ix, err = Open(ctx, cfg.DBConfig, cfg.Source); err == nil {
				err = ix.Wait(ctx)
				_ = ix.Close(context.Background())
			}
		} else {
			_, err = BuildSnapshot(ctx, cfg.DBConfig, cfg.Source)
		}
		fmt.Printf("result: %v\n", err)
		if !errors.Is(err, context.Canceled) && !isInterrupted(err) {
			t.Fatalf("the first attach ended with %v, want context.Canceled (or SQLite's interrupt)", err)
		}
	}
}

// TestInterruptedFirstAttach: a first attach (rebuild.Open or the cron
// job's BuildSnapshot, in a process of its own) interrupted by SIGINT or
// SIGTERM during its scan removes everything it added: sqlite_master is
// as before byte for byte, the journal mode is the app's, no snapshot or
// other file is left, the app writes as before, and a later Open attaches
// normally. kill -9 leaves the attach behind (documented); Detach then
// removes it.
func TestInterruptedFirstAttach(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT or SIGTERM to send on Windows")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		mode, how string
		sig       os.Signal
	}{
		{"DELETE", "open", os.Interrupt},
		{"DELETE", "build", os.Interrupt},
		{"DELETE", "open", syscall.SIGTERM},
		{"WAL", "open", os.Interrupt},
		{"WAL", "build", syscall.SIGTERM},
		{"DELETE", "open", os.Kill},
		{"WAL", "build", os.Kill},
	} {
		t.Run(fmt.Sprintf("%s/%s/%v", tc.mode, tc.how, tc.sig), func(t *testing.T) {
			seed := ids("seed", 5000)
			path := driftDB(t, tc.mode, seed)
			dir := filepath.Dir(path)
			pristine, files, header := schema(t, path), dirEntries(t, dir), headerMode(t, path)
			cmd, lines, stderr := streamChild(t, dir, "firstattach", path, tc.how)
			if l := waitLine(t, lines, "progress "); l == fmt.Sprintf("progress %d of %d", len(seed), len(seed)) {
				t.Fatalf("no progress reported during the scan, only %q", l)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			rest := drain(lines)
			err := cmd.Wait()
			if tc.sig == os.Kill {
				if err == nil {
					t.Fatal("the killed child exited normally")
				}
				// The app starts again: its first read rolls back what the
				// killed process may have left in a rollback journal.
				var n int
				if err := modeConn(t, path, tc.mode).QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != len(seed) {
					t.Fatalf("the app's first read after kill -9: %d rows, %v", n, err)
				}
				if bytes.Equal(schema(t, path), pristine) {
					t.Fatal("kill -9 during the first attach left nothing behind (expected the attach to stay until Detach)")
				}
				// The killed process's scan lease (and its hold, if its
				// worker had written it) stay: Detach refuses until they
				// expire (store.LeaseTerm) unless forced.
				if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); !errors.Is(err, ErrHeld) {
					t.Fatalf("Detach after kill -9 = %v, want ErrHeld", err)
				}
				// Meanwhile the app opens as usual: the source is attached and
				// was never scanned, so Open scans it.
				ix := open(t, appConfig(path))
				exact(t, ix, tableIDs(t, path, "records"), slices.Concat(seed[:100], ids("never", 100)))
				if err := ix.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if err := DetachWith(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id", DetachOptions{Force: true}); err != nil {
					t.Fatalf("Detach after kill -9: %v", err)
				}
				_ = os.Remove(path + ".sfb")
			} else if err != nil || !strings.Contains(rest, "result: ") {
				t.Fatalf("child: %v\n%s\n%s", err, rest, stderr)
			}
			if got := schema(t, path); !bytes.Equal(got, pristine) {
				t.Fatalf("sqlite_master after the interrupted first attach:\n%s\nwant\n%s", got, pristine)
			}
			if got := headerMode(t, path); got != header {
				t.Fatalf("journal mode %s, was %s", got, header)
			}
			if got := dirEntries(t, dir); !slices.Equal(got, files) {
				t.Fatalf("files after the interrupted first attach: %v, were %v", got, files)
			}
			integrity(t, path)
			insertIDs(t, modeConn(t, path, tc.mode), "after")
			ix := open(t, appConfig(path))
			exact(t, ix, tableIDs(t, path, "records"), slices.Concat(seed[:100], []string{"after"}, ids("never", 100)))
		})
	}
}

// TestFailedFirstAttachIsUndone: a first attach whose scan fails (a
// SQLite error mid-scan, injected) removes what it added, for Open and
// BuildSnapshot, in DELETE and WAL mode; so does the cron job's first
// attach cancelled after its scan, before its snapshot is saved.
func TestFailedFirstAttachIsUndone(t *testing.T) {
	ctx := context.Background()
	injected := errors.New("injected read failure")
	for _, mode := range []string{"DELETE", "WAL"} {
		for _, how := range []string{"open", "build"} {
			t.Run(mode+"/"+how, func(t *testing.T) {
				path := driftDB(t, mode, ids("seed", 3000))
				dir := filepath.Dir(path)
				pristine, files := schema(t, path), dirEntries(t, dir)
				cfg := appConfig(path)
				cfg.knobs.scanRow = func(n int64) error {
					if n > 1000 {
						return injected
					}
					return nil
				}
				var err error
				if how == "open" { // the first scan runs in the background: Wait says how it ended
					var ix *Index
					if ix, err = Open(ctx, cfg.DBConfig, cfg.Source); err == nil {
						err = ix.Wait(ctx)
						_ = ix.Close(ctx)
					}
				} else {
					_, err = BuildSnapshot(ctx, cfg.DBConfig, cfg.Source)
				}
				if !errors.Is(err, injected) {
					t.Fatalf("%s = %v, want the injected failure", how, err)
				}
				if got := schema(t, path); !bytes.Equal(got, pristine) {
					t.Fatalf("sqlite_master after the failed first attach:\n%s", got)
				}
				if got := dirEntries(t, dir); !slices.Equal(got, files) {
					t.Fatalf("files after the failed first attach: %v, were %v", got, files)
				}
			})
		}
	}
}

// TestDetachAfterCloseOfAReattachedIndex: an index whose source was
// attached again (a migration dropped a trigger) leaves nothing behind
// once closed: Detach runs and the schema is as before.
func TestDetachAfterCloseOfAReattachedIndex(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		path := driftDB(t, "WAL", ids("seed", 100))
		pristine := schema(t, path)
		ix := open(t, appConfig(path))
		execIn(t, path, "WAL", `DROP TRIGGER syncfilter_ins_1`)
		if _, err := ix.Fetched(ctx, "seed-0000001"); err != nil { // notices, asks for the attach
			t.Fatal(err)
		}
		if err := ix.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := Detach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
			t.Fatalf("round %d: Detach after Close: %v", round, err)
		}
		if !bytes.Equal(schema(t, path), pristine) {
			t.Fatalf("round %d: schema after Detach differs", round)
		}
	}
}

// TestCronCancelledAfterItsScan: the cron job's context ends just after
// the scan of a first attach (in the last Progress call): the job fails
// and leaves the database and the directory as they were.
func TestCronCancelledAfterItsScan(t *testing.T) {
	for _, mode := range []string{"DELETE", "WAL"} {
		t.Run(mode, func(t *testing.T) {
			path := driftDB(t, mode, ids("seed", 3000))
			dir := filepath.Dir(path)
			pristine, files := schema(t, path), dirEntries(t, dir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := appConfig(path)
			cfg.Progress = func(done, total int64) {
				if done >= total {
					cancel()
				}
			}
			if _, err := BuildSnapshot(ctx, cfg.DBConfig, cfg.Source); !errors.Is(err, context.Canceled) && !isInterrupted(err) {
				t.Fatalf("BuildSnapshot cancelled after its scan = %v, want context.Canceled", err)
			}
			if got := schema(t, path); !bytes.Equal(got, pristine) {
				t.Fatalf("sqlite_master after the cancelled cron job:\n%s", got)
			}
			if got := dirEntries(t, dir); !slices.Equal(got, files) {
				t.Fatalf("files after the cancelled cron job: %v, were %v", got, files)
			}
		})
	}
}
