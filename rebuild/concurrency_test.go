package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/internal/testdriver"

	"golang.org/x/text/unicode/norm"
)

// The tests of this file exercise the index's concurrency through its
// public API, on real files, with other connections and processes
// writing: no call may hang (a watchdog dumps every goroutine's stack and
// fails instead), no goroutine may outlive Close, and every answer is
// judged against what was committed before the call began.

// callBound is how long any one call may take before the watchdog fails
// the test: far above anything a correct call needs on a loaded machine,
// far below a test timeout.
const callBound = 60 * time.Second

// monitor is a watchdog over calls in flight: when one has run longer than
// its bound, it prints every goroutine's stack and panics, which fails the
// test binary at once instead of letting it hang until the test timeout.
type monitor struct {
	bound time.Duration
	note  atomic.Pointer[string] // printed with the stacks (a run's seed)
	mu    sync.Mutex
	calls map[int64]flightCall
	next  int64
	stop  chan struct{}
	done  chan struct{}
}

type flightCall struct {
	what  string
	began time.Time
}

func newMonitor(t testing.TB, bound time.Duration) *monitor {
	m := &monitor{bound: bound, calls: map[int64]flightCall{}, stop: make(chan struct{}), done: make(chan struct{})}
	go m.watch()
	t.Cleanup(m.close)
	return m
}

func (m *monitor) watch() {
	defer close(m.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		m.mu.Lock()
		var late []string
		for _, c := range m.calls {
			if d := time.Since(c.began); d > m.bound {
				late = append(late, fmt.Sprintf("%s (running for %v)", c.what, d.Round(time.Millisecond)))
			}
		}
		m.mu.Unlock()
		if len(late) > 0 {
			sort.Strings(late)
			note := ""
			if n := m.note.Load(); n != nil {
				note = " (" + *n + ")"
			}
			panic(fmt.Sprintf("watchdog%s: calls did not return within %v: %s\n\n%s", note, m.bound, strings.Join(late, "; "), allStacks()))
		}
	}
}

// do runs fn as one watched call.
func (m *monitor) do(what string, fn func()) {
	m.mu.Lock()
	id := m.next
	m.next++
	m.calls[id] = flightCall{what, time.Now()}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.calls, id)
		m.mu.Unlock()
	}()
	fn()
}

// close stops the watchdog goroutine and waits for it (idempotent).
func (m *monitor) close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

func allStacks() string {
	buf := make([]byte, 4<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// goroutinesBackTo waits until no more goroutines run than baseline and
// fails, listing them, if that does not happen soon.
func goroutinesBackTo(t testing.TB, baseline int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before Open:\n%s", runtime.NumGoroutine(), baseline, allStacks())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// baselineGoroutines counts the goroutines running now, once the ones
// ending on their own (a finished test's, the GC's helpers) have ended.
func baselineGoroutines() int {
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	return runtime.NumGoroutine()
}

// modeDB creates a database in the given journal mode ("wal" or "delete")
// with the app tables named, each (id TEXT PRIMARY KEY, body TEXT) and
// holding ids.
func modeDB(t testing.TB, mode string, tables []string, ids ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db := modeConn(t, path, mode)
	defer db.Close()
	for _, tb := range tables {
		mustExec(t, db, `CREATE TABLE `+tb+` (id TEXT PRIMARY KEY, body TEXT)`)
		insertInto(t, db, tb, ids...)
	}
	return path
}

// modeConn opens the app's own connection in its journal mode.
func modeConn(t testing.TB, path, mode string) *sql.DB {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{JournalMode: mode, BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func insertInto(t testing.TB, db *sql.DB, table string, ids ...string) {
	t.Helper()
	if err := tryInsert(db, table, ids...); err != nil {
		t.Fatal(err)
	}
}

// tryInsert commits ids into table in one transaction.
func tryInsert(db *sql.DB, table string, ids ...string) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.Exec(`INSERT INTO `+table+` (id, body) VALUES (?, 'x')`, id); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("insert %+q: %w", id, err)
		}
	}
	return tx.Commit()
}

// unlocked checks that another connection can write and commit: nothing
// the library does holds a lock on the file for longer than a statement
// (SQLite waits 5 s for a lock a statement holds).
func unlocked(t testing.TB, path, table string) {
	t.Helper()
	db, err := testdriver.Open(path, testdriver.App{BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := fmt.Sprintf("lockprobe-%d", time.Now().UnixNano())
	if err := tryInsert(db, table, id); err != nil {
		t.Fatalf("the database is locked for another connection: %v", err)
	}
}

// spelled is an id as stored and its other spellings.
type spelled struct {
	stored string
	forms  []string // every spelling a query may use: NFC, NFD, the stored one
}

// idSpelling returns the i-th id of a family: a third stored in NFD (an
// "é" decomposed), a third in NFC, and every seventh with a KELVIN SIGN
// (U+212A), whose NFC (and NFD) is the ASCII "K"; the rest ASCII.
func idSpelling(family string, i int) spelled {
	var stored string
	switch {
	case i%7 == 3:
		stored = fmt.Sprintf("\u212Aelvin-%s-%06d", family, i)
	case i%3 == 0:
		stored = norm.NFD.String(fmt.Sprintf("café-%s-%06d", family, i))
	case i%3 == 1:
		stored = fmt.Sprintf("café-%s-%06d", family, i) // NFC as typed
	default:
		stored = fmt.Sprintf("plain-%s-%06d", family, i)
	}
	forms := []string{stored}
	for _, f := range []string{norm.NFC.String(stored), norm.NFD.String(stored)} {
		if !contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return spelled{stored: stored, forms: forms}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reference is what the test committed to one table, id by id: 0 never
// inserted, 1 being inserted (the transaction may or may not have
// committed), 2 committed. An answer is judged against the states before
// and after the call: committed before → must be fetched; still never
// inserted after → must be missing; anything else may go either way.
type reference struct {
	family string
	state  []atomic.Int32
	next   atomic.Int64 // ids handed to inserters so far
}

func newReference(family string, n int) *reference {
	return &reference{family: family, state: make([]atomic.Int32, n)}
}

func (r *reference) id(i int) spelled { return idSpelling(r.family, i) }

// committed marks ids [from, to) as committed without an inserter (seed
// rows, rows a child process committed before the call).
func (r *reference) committed(from, to int) {
	for i := from; to > i; i++ {
		r.state[i].Store(2)
	}
	for {
		n := r.next.Load()
		if int64(to) <= n || r.next.CompareAndSwap(n, int64(to)) {
			return
		}
	}
}

// take hands the next n ids to an inserter, marked as being inserted; nil
// when the reference is full.
func (r *reference) take(n int) []int {
	start := int(r.next.Add(int64(n))) - n
	if start+n > len(r.state) {
		return nil
	}
	out := make([]int, n)
	for j := range out {
		out[j] = start + j
		r.state[start+j].Store(1)
	}
	return out
}

// verdict checks one answer: i's state before the call and the answer.
func (r *reference) verdict(i int, before int32, fetched bool) error {
	after := r.state[i].Load()
	switch {
	case before == 2 && !fetched:
		return fmt.Errorf("%s id %d (%+q) was committed before the call and answered not fetched", r.family, i, r.id(i).stored)
	case after == 0 && fetched:
		return fmt.Errorf("%s id %d (%+q) was never inserted and answered fetched", r.family, i, r.id(i).stored)
	}
	return nil
}

// inserter commits the reference's ids into table on its own connection,
// batch ids per transaction, until stop is closed or the reference is
// full; it counts its commits. It pauses between commits: an app that
// writes without a pause starves every other writer in a rollback-journal
// mode (SQLite's locks are not fair), whoever they are.
func inserter(db *sql.DB, table string, ref *reference, batch int, pause time.Duration, stop <-chan struct{}, commits *atomic.Int64, errs chan<- error) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
		list := ref.take(batch)
		if list == nil {
			return
		}
		keys := make([]string, len(list))
		for j, i := range list {
			keys[j] = ref.id(i).stored
		}
		if err := tryInsert(db, table, keys...); err != nil {
			errs <- fmt.Errorf("inserter of %s: %w", table, err)
			return
		}
		for _, i := range list {
			ref.state[i].Store(2)
		}
		commits.Add(1)
	}
}

// probe asks about a random sample of the reference's ids (in random
// spellings, some ids named twice or more) and never-inserted ids, through
// Missing or Fetched, and judges every answer.
type probe struct {
	ref    *reference
	keys   []string
	idx    []int // reference index, or -1 for a never-inserted id
	before []int32
}

func newProbe(ref *reference, pick func(n int) int, n int) *probe {
	p := &probe{ref: ref}
	limit := int(min(ref.next.Load()+50, int64(len(ref.state))))
	for range n {
		if pick(8) == 0 {
			p.keys = append(p.keys, fmt.Sprintf("never-%s-%d-%s", ref.family, pick(1<<30), norm.NFD.String("é")))
			p.idx = append(p.idx, -1)
			p.before = append(p.before, 0)
			continue
		}
		i := pick(limit)
		if len(p.idx) > 0 && pick(8) == 0 {
			// An id the page names already, in any of its spellings:
			// every position is answered on its own.
			if j := p.idx[pick(len(p.idx))]; j >= 0 {
				i = j
			}
		}
		forms := ref.id(i).forms
		p.keys = append(p.keys, forms[pick(len(forms))])
		p.idx = append(p.idx, i)
		p.before = append(p.before, ref.state[i].Load())
	}
	return p
}

// judgeMissing checks Missing's answers, one per position of p.keys.
func (p *probe) judgeMissing(missing []bool) []error {
	if len(missing) != len(p.keys) {
		return []error{fmt.Errorf("Missing answered %d positions of %d", len(missing), len(p.keys))}
	}
	var errs []error
	for j, k := range p.keys {
		if p.idx[j] < 0 {
			if !missing[j] {
				errs = append(errs, fmt.Errorf("never-inserted %+q answered fetched by Missing", k))
			}
			continue
		}
		if err := p.ref.verdict(p.idx[j], p.before[j], !missing[j]); err != nil {
			errs = append(errs, fmt.Errorf("Missing(%+q): %w", k, err))
		}
	}
	return errs
}

// judgeFetched checks one Fetched answer, about p.keys[j].
func (p *probe) judgeFetched(j int, got bool) error {
	if p.idx[j] < 0 {
		if got {
			return fmt.Errorf("Fetched(%+q) of a never-inserted id = true", p.keys[j])
		}
		return nil
	}
	if err := p.ref.verdict(p.idx[j], p.before[j], got); err != nil {
		return fmt.Errorf("Fetched(%+q): %w", p.keys[j], err)
	}
	return nil
}

// newRand returns a generator seeded with seed (reproducible runs).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// TestScansNeverWaitForAReaderTheirCallerHolds: with one or two reading
// connections (DBConfig.Readers) the first open's scan, a rebuild's scan
// and the count that sizes the filter alongside never wait for a
// connection their own call holds, also when the builder must wait for
// the count (more rows than it keeps as digests).
func TestScansNeverWaitForAReaderTheirCallerHolds(t *testing.T) {
	rows := ids("seed", 40000) // more than the scan's chunks buffered ahead of the builder
	for _, readers := range []int{1, 2} {
		t.Run(fmt.Sprint(readers), func(t *testing.T) {
			ctx := context.Background()
			path := appDB(t, rows...)
			mon := newMonitor(t, callBound)
			cfg := appConfig(path)
			cfg.Readers = readers
			cfg.knobs.deferredRows = 500 // the builder waits for the count after 500 rows
			var ix *Index
			mon.do("first Open (attach and scan)", func() { ix = open(t, cfg) })
			mon.do("Rebuild", func() {
				if err := ix.Rebuild(ctx); err != nil {
					t.Error(err)
				}
			})
			// After a migration the rebuild resolves the source again
			// (taking a reader) before it scans.
			mustExec(t, rawDB(t, path), `CREATE INDEX records_body ON records (body)`)
			mon.do("Rebuild after a change of schema", func() {
				if err := ix.Rebuild(ctx); err != nil {
					t.Error(err)
				}
			})
			expect(t, ix, set(rows[:50]), append(rows[:50:50], ids("never", 50)...))
			if st := ix.Stats(); st.Capacity < uint64(len(rows)) {
				t.Fatalf("capacity %d for %d rows: not sized from the count", st.Capacity, len(rows))
			}
		})
	}
}
