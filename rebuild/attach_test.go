package rebuild

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"github.com/syncfilter/syncfilter/rebuild/internal/store"
	"golang.org/x/text/unicode/norm"
)

// guestDB is an app's database in rollback-journal mode (the default), with
// tables whose key columns the library must refuse, and one it accepts.
func guestDB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`,
		`CREATE TABLE ints (id INTEGER UNIQUE)`,
		`CREATE TABLE nums (id NUMERIC UNIQUE)`,
		`CREATE TABLE blobs (id BLOB UNIQUE)`,
		`CREATE TABLE untyped (id UNIQUE)`,
		`CREATE TABLE reals (id DOUBLE UNIQUE)`,
		`CREATE TABLE nocase (id TEXT COLLATE NOCASE UNIQUE)`,
		`CREATE TABLE rtrim (id VARCHAR(36) COLLATE RTRIM PRIMARY KEY)`,
		`CREATE TABLE unindexed (id TEXT, body TEXT)`,
		`CREATE TABLE second (body TEXT, id TEXT)`,
		`CREATE INDEX second_body_id ON second (body, id)`, // id is not its first column
		`CREATE TABLE otherindex (id TEXT)`,
		`CREATE INDEX otherindex_id ON otherindex (id COLLATE NOCASE)`, // not usable for id = ?
		`CREATE VIEW recent AS SELECT id FROM records`,
		`INSERT INTO records VALUES ('r1', 'x')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

// TestRefusalsLeaveNoTrace runs every refusal of a source on a real app
// database, never attached and already attached (another source): the
// typed error comes before any DDL, sqlite_master and the journal mode are
// exactly as before, and the app's own INSERTs still work.
func TestRefusalsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		table, column string
		want          error
	}{
		{"records", "idd", ErrNoSource}, // a typo
		{"nosuch", "id", ErrNoSource},
		{"recent", "id", ErrNoSource}, // a view
		{"ints", "id", ErrInexactColumn},
		{"nums", "id", ErrInexactColumn},
		{"blobs", "id", ErrInexactColumn},
		{"untyped", "id", ErrInexactColumn},
		{"reals", "id", ErrInexactColumn},
		{"nocase", "id", ErrInexactColumn},
		{"rtrim", "id", ErrInexactColumn},
		{"unindexed", "id", ErrNotIndexed},
		{"second", "id", ErrNotIndexed},
		{"otherindex", "id", ErrNotIndexed},
		{"records", "bad name", ErrBadConfig},
	}
	for _, attachedFirst := range []bool{false, true} {
		path := guestDB(t)
		if attachedFirst {
			ix := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id"}})
			if err := ix.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("attached=%v/%s.%s", attachedFirst, tc.table, tc.column), func(t *testing.T) {
				before, mode := schema(t, path), journalMode(t, path)
				for _, how := range []string{"Open", "BuildSnapshot"} {
					cfg := config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: tc.table, Column: tc.column, Snapshot: filepath.Join(t.TempDir(), "s.sfb")}}
					var err error
					if how == "Open" {
						var ix *Index
						if ix, err = Open(context.Background(), cfg.DBConfig, cfg.Source); err == nil {
							_ = ix.Close(context.Background())
						}
					} else {
						_, err = BuildSnapshot(context.Background(), cfg.DBConfig, cfg.Source)
					}
					if !errors.Is(err, tc.want) {
						t.Fatalf("%s = %v, want %v", how, err, tc.want)
					}
					if after := schema(t, path); !bytes.Equal(before, after) {
						t.Fatalf("%s changed sqlite_master:\nbefore %s\nafter  %s", how, before, after)
					}
					if got := journalMode(t, path); got != mode {
						t.Fatalf("%s changed the journal mode from %s to %s", how, mode, got)
					}
					if _, err := os.Stat(cfg.Snapshot); !os.IsNotExist(err) {
						t.Fatalf("%s wrote a snapshot: %v", how, err)
					}
				}
				if tc.table == "nosuch" || tc.table == "recent" {
					return
				}
				app := plainDB(t, path)
				if _, err := app.Exec(`INSERT INTO `+store.Quote(tc.table)+` (id) VALUES (?)`, fmt.Sprintf("app-row-%v-%s", attachedFirst, tc.column)); err != nil {
					t.Fatalf("the app's INSERT fails after the refusal: %v", err)
				}
			})
		}
	}
}

// TestFailedAttachRollsBack: a failure inside attach's transaction (here
// an app's index occupying the name of the log table) leaves nothing.
// The attach of a table that holds rows runs in the background: Wait
// says why no filter serves, and calls are answered exactly meanwhile.
func TestFailedAttachRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := guestDB(t)
	app := rawDB(t, path)
	mustExec(t, app, `CREATE TABLE notes (n TEXT)`)
	mustExec(t, app, `CREATE INDEX syncfilter_log_1 ON notes (n)`)
	before := schema(t, path)
	ix, err := Open(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close(ctx)
	if err := ix.Wait(ctx); !errors.Is(err, ErrNotServing) || !strings.Contains(err.Error(), "syncfilter_log_1") {
		t.Fatalf("Wait = %v, want ErrNotServing naming the name clash", err)
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("failed attach left a trace:\nbefore %s\nafter  %s", before, after)
	}
	mustExec(t, app, `INSERT INTO records (id) VALUES ('after')`)
	expect(t, ix, set([]string{"r1", "after"}), []string{"r1", "after", "never"})
}

// TestNamesResolveCaseInsensitively: one table is one source whatever the
// letter case of its name in the configuration.
func TestNamesResolveCaseInsensitively(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "app.db")
	app := rawDB(t, path)
	mustExec(t, app, `CREATE TABLE messages (server_id TEXT PRIMARY KEY)`)
	mustExec(t, app, `INSERT INTO messages VALUES ('m1'), ('m2')`)
	snap := path + ".sfb"
	upper := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "MESSAGES", Column: "SERVER_ID", Snapshot: snap}})
	dsUpper, _ := datasetID(upper)
	if err := upper.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lower := open(t, config{DBConfig: DBConfig{Path: path, Driver: testdriver.Driver()}, Source: Source{Table: "messages", Column: "server_id", Snapshot: snap}})
	dsLower, _ := datasetID(lower)
	if dsUpper != dsLower {
		t.Fatalf("two dataset ids for one table: %x, %x", dsUpper, dsLower)
	}
	if err := stats(lower).SnapshotError; err != nil {
		t.Fatalf("the snapshot saved under MESSAGES is refused under messages: %v", err)
	}
	var sources, triggers int
	_ = app.QueryRow(`SELECT count(*) FROM syncfilter_sources`).Scan(&sources)
	_ = app.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger'`).Scan(&triggers)
	if sources != 1 || triggers != 2 {
		t.Fatalf("%d sources and %d triggers, want 1 and 2", sources, triggers)
	}
	var tbl, col string
	_ = app.QueryRow(`SELECT tbl, col FROM syncfilter_sources`).Scan(&tbl, &col)
	if tbl != "messages" || col != "server_id" {
		t.Fatalf("source recorded as %s.%s, want the stored names messages.server_id", tbl, col)
	}
	mustExec(t, app, `INSERT INTO messages VALUES ('m3')`)
	expect(t, lower, set([]string{"m1", "m2", "m3"}), []string{"m1", "m2", "m3", "m4"})
}

// TestReadOnlyChangesNothing: a read-only index on a database never
// attached answers exactly from SQLite (canonical spellings included) and
// leaves the file, the schema and the journal mode as they were, also
// while another connection holds a write transaction.
func TestReadOnlyChangesNothing(t *testing.T) {
	t.Parallel()
	path := guestDB(t)
	app := plainDB(t, path)
	nfd := norm.NFD.String("Ångström-1")
	kelvin := "\u212a-2" // KELVIN SIGN: NFC is "K-2", an ASCII key
	insertIDs(t, app, nfd, kelvin, "plain-3")
	_ = app.Close()
	before, sum := schema(t, path), fileSum(t, path)

	// Another process-like connection holds a write transaction open.
	writer := plainDB(t, path)
	writer.SetMaxOpenConns(1)
	tx, err := writer.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO records (id) VALUES ('uncommitted')`); err != nil {
		t.Fatal(err)
	}
	ix := open(t, config{DBConfig: DBConfig{Path: path, ReadOnly: true, Driver: testdriver.Driver()}, Source: Source{Table: "records", Column: "id", Snapshot: path + ".sfb"}})
	st := stats(ix)
	if st.Attached || st.Serving {
		t.Fatalf("attached %v, serving %v on a database never attached", st.Attached, st.Serving)
	}
	fetched := set([]string{"r1", norm.NFC.String(nfd), nfd, "K-2", kelvin, "plain-3"})
	expect(t, ix, fetched, []string{"r1", norm.NFC.String(nfd), nfd, "K-2", kelvin, "plain-3", "uncommitted", "never", "k-2"})
	ctx := context.Background()
	for name, err := range map[string]error{
		"Rebuild": ix.Rebuild(ctx),
		"Save":    ix.Save(ctx),
	} {
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s = %v, want ErrBadConfig", name, err)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	_ = writer.Close()
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("read-only Open changed sqlite_master:\n%s", after)
	}
	if fileSum(t, path) != sum {
		t.Fatal("read-only Open changed the database file")
	}
	if got := journalMode(t, path); got != "delete" {
		t.Fatalf("journal mode %s", got)
	}
	for _, f := range []string{path + ".sfb", path + "-wal"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Fatalf("read-only Open created %s", f)
		}
	}
}

// TestAppDefinedCollationIsRefused: a key column under a collation the
// app defined (one that folds an accent, say) is refused with
// ErrInexactColumn, whether the library's connections have the collation
// (a driver that defines it on every connection, which DBConfig.DB hands
// over) or not; before the check read the collation by name, a library
// that had it accepted the column and confirmed never-fetched ids that
// the collation equates with stored ones.
func TestAppDefinedCollationIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	unaccent := func(a, b string) int {
		return strings.Compare(strings.ReplaceAll(a, "é", "e"), strings.ReplaceAll(b, "é", "e"))
	}
	withColl, ok := testdriver.WithCollation("UNACCENT", unaccent)
	if !ok {
		t.Skipf("%s defines collations per handle, not per driver", testdriver.Name())
	}
	path := filepath.Join(t.TempDir(), "app.db")
	app := sql.OpenDB(connector{d: withColl, dsn: testdriver.DSN(testdriver.Name(), path, testdriver.App{JournalMode: "WAL", BusyTimeout: 10 * time.Second})})
	t.Cleanup(func() { _ = app.Close() })
	mustExec(t, app, `CREATE TABLE records (id TEXT COLLATE UNACCENT PRIMARY KEY, body TEXT)`)
	mustExec(t, app, `INSERT INTO records (id) VALUES ('café-1')`)
	before := schema(t, path)
	for name, d := range map[string]driver.Driver{"with the collation": withColl, "without it": testdriver.Driver()} {
		_, err := Open(ctx, DBConfig{Path: path, Driver: d}, Source{Table: "records", Column: "id"})
		if !errors.Is(err, ErrInexactColumn) {
			t.Fatalf("%s: Open = %v, want ErrInexactColumn", name, err)
		}
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("a refusal changed sqlite_master:\nbefore %s\nafter  %s", before, after)
	}
}

// connector opens connections of a driver value for sql.OpenDB.
type connector struct {
	d   driver.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

// TestUTF16DatabaseIsRefused: a database whose text encoding is UTF-16
// is refused at open with ErrInexactColumn, naming the encoding, and nothing is
// written to it.
func TestUTF16DatabaseIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "app.db")
	app := rawDB(t, path)
	app.SetMaxOpenConns(1)
	mustExec(t, app, `PRAGMA encoding = 'UTF-16le'`)
	mustExec(t, app, `CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT)`)
	mustExec(t, app, `INSERT INTO records (id) VALUES ('café-1')`)
	before := schema(t, path)
	_, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id"})
	if !errors.Is(err, ErrInexactColumn) || !strings.Contains(err.Error(), "UTF-16") {
		t.Fatalf("Open of a UTF-16 database = %v, want ErrInexactColumn naming the encoding", err)
	}
	if after := schema(t, path); !bytes.Equal(before, after) {
		t.Fatalf("the refusal changed sqlite_master:\nbefore %s\nafter  %s", before, after)
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
	t.Parallel()
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
			t.Parallel()
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
				// The killed process's scan lease stays: Detach refuses
				// until it expires (store.LeaseTerm) unless forced.
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
				if err := forceDetach(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, "records", "id"); err != nil {
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
	t.Parallel()
	ctx := context.Background()
	injected := errors.New("injected read failure")
	for _, mode := range []string{"DELETE", "WAL"} {
		for _, how := range []string{"open", "build"} {
			t.Run(mode+"/"+how, func(t *testing.T) {
				t.Parallel()
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

// TestFailedFirstScanIsTriedAgain: the first scan of a source this open
// attached fails (as when SQLite reports the database locked while the
// app writes without pause): the attach is undone, calls are answered
// exactly from SQLite, and, as the app keeps calling, the index attaches
// the source again and scans it after a wait that doubles with each
// failure, until a filter serves. Never "detached": the app did not
// detach anything.
func TestFailedFirstScanIsTriedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := ids("seed", 300)
	path := appDB(t, seed...)
	cfg, hk := hooked(appConfig(path))
	cfg.knobs.retryFirst = 20 * time.Millisecond
	var scans atomic.Int32
	fail := func(n int64) error {
		if n == 0 && scans.Add(1) <= 3 {
			return errors.New("database is locked")
		}
		return nil
	}
	hk.scanRow.Store(&fail)
	ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(ctx) })
	probe := append(seed[:30:30], ids("never", 30)...)
	want := set(seed)
	deadline := time.Now().Add(callBound)
	for !stats(ix).Serving {
		if time.Now().After(deadline) {
			st := stats(ix)
			t.Fatalf("no filter after %d scans: attached %v, upkeep %q, last error %v", scans.Load(), st.Attached, st.Upkeep, st.LastError)
		}
		if err := stats(ix).LastError; err != nil && strings.Contains(err.Error(), "detached") {
			t.Fatalf("a failed first scan reported as a detach: %v", err)
		}
		expect(t, ix, want, probe)
		time.Sleep(10 * time.Millisecond)
	}
	if n := scans.Load(); n != 4 {
		t.Fatalf("%d scans, want 3 failed and one that served", n)
	}
	if st := stats(ix); !st.Attached {
		t.Fatalf("serving but not attached: %+v", st)
	}
	insertIDs(t, rawDB(t, path), "after-0")
	want["after-0"] = true
	expect(t, ix, want, append(probe, "after-0"))
}

// TestFirstScanWaitsForTheFirstCall: Open on a table of rows the library
// never attached returns with nothing written: the attach (DDL, which
// would make the app's connections parse the schema again under the
// first page) and the first scan start once the first call is answered,
// from SQLite. Rows the app writes before the attach (no trigger logs
// them) and while the scan runs are all answered fetched once the filter
// serves.
func TestFirstScanWaitsForTheFirstCall(t *testing.T) {
	t.Parallel()
	path := modeDB(t, "wal", []string{"records"}, ids("seed", 500)...)
	hk := &hooks{}
	entered, release := scanGate(t, hk)
	ix, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver(), knobs: hk.knobsOf(knobs{})},
		Source{Table: "records", Column: "id", Snapshot: path + ".sfb"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(context.Background()) })
	defer release() // before Close, on a failure
	app := rawDB(t, path)
	insertInto(t, app, "records", ids("between", 50)...)
	time.Sleep(100 * time.Millisecond) // an attach at once would have committed by now
	select {
	case <-entered:
		t.Fatal("the first scan started before any call")
	default:
	}
	var triggers int
	if err := app.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'records'`).Scan(&triggers); err != nil || triggers != 0 {
		t.Fatalf("%d triggers on the table before any call (%v), want none", triggers, err)
	}
	page := slices.Concat(ids("seed", 20), ids("between", 20), ids("during", 20), ids("never", 20))
	judgePage(t, ix, storedCanon(t, path, "records"), page, true, "the first call, from SQLite")
	waitClosed(t, entered, "the first scan, after the first call")
	insertInto(t, app, "records", ids("during", 50)...)
	release()
	waitServing(t, ix)
	judgePage(t, ix, storedCanon(t, path, "records"), page, true, "once the filter serves")
}

// TestWaitStartsTheFirstScan: with no call, Wait starts the first scan of
// a table never attached (Upkeep names it, waiting, before), and returns
// with a filter serving.
func TestWaitStartsTheFirstScan(t *testing.T) {
	t.Parallel()
	path := modeDB(t, "wal", []string{"records"}, ids("seed", 500)...)
	ix, err := Open(context.Background(), DBConfig{Path: path, Driver: testdriver.Driver()}, Source{Table: "records", Column: "id", Snapshot: path + ".sfb"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close(context.Background()) })
	if st := stats(ix); st.Serving || st.Upkeep != "rebuild" {
		t.Fatalf("before any call: serving %v, upkeep %q; want not serving, a rebuild waiting", st.Serving, st.Upkeep)
	}
	waitServing(t, ix)
	judgePage(t, ix, storedCanon(t, path, "records"), append(ids("seed", 20), ids("never", 20)...), true, "after Wait")
}
