package syncbench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"
)

// A real-loop child is one process of the app: it opens its pool and the
// library, answers its segment's pages with both sides and stores each
// page's new ids, then closes everything, or exits without Close.

// RealPage is what one page measured.
type RealPage struct {
	Page int    `json:"page"`
	Kind string `json:"kind"`
	Size int    `json:"size"`
	New  int    `json:"new"`
	Mark string `json:"mark,omitempty"`
	// Digest is a hash of the page's ids, in order: twins compare it.
	Digest uint64 `json:"digest"`
	// InListBlind counts the positions where the IN-list cannot know the
	// truth: names stored in NFD only, asked in NFC.
	InListBlind int `json:"inlist_blind"`
	// InListIDs is how many ids the IN-list side bound: the page's, or
	// under RealConfig.StoredOnly those it finds stored.
	InListIDs int           `json:"inlist_ids"`
	Lib       time.Duration `json:"lib_ns"`
	InList    time.Duration `json:"inlist_ns"`
	// Allocations in the process during each side's call (Mallocs).
	LibAllocs    uint64        `json:"lib_allocs"`
	InListAllocs uint64        `json:"inlist_allocs"`
	Wait         time.Duration `json:"wait_ns"`
	Insert       time.Duration `json:"insert_ns"`
	Bypass       uint64        `json:"bypass"`    // keys the library answered from SQLite alone in this call
	FalsePos     uint64        `json:"false_pos"` // maybes SQLite refuted in this call
	Serving      bool          `json:"serving"`   // after the call
	EstFPR       float64       `json:"est_fpr"`   // after the call
}

// RealEvent is a migration the child ran.
type RealEvent struct {
	Name string        `json:"name"`
	Page int           `json:"page"` // it ran before this page
	Took time.Duration `json:"took_ns"`
}

// RealChildReport is what a child writes to its -out file.
type RealChildReport struct {
	Segment  Segment       `json:"segment"`
	Main     time.Duration `json:"main_ns"`   // the parent's start of the child → its code running
	Replay   time.Duration `json:"replay_ns"` // making the earlier pages again (the reference)
	PoolOpen time.Duration `json:"pool_open_ns"`
	LibOpen  time.Duration `json:"lib_open_ns"`
	SQLite   string        `json:"sqlite"`
	// Ablated is EnvAblate as the child read it, checked against its
	// build (AblateBuild) and the config.
	Ablated string `json:"ablated"`
	// PoolConns is how many connections the app's pool had open at the
	// end (at most AppPoolConns).
	PoolConns int         `json:"pool_conns"`
	Events    []RealEvent `json:"events"`
	Pages     []RealPage  `json:"pages"`
	Start     LibStats    `json:"start"` // just after the library opened
	End       LibStats    `json:"end"`
}

// RealChild runs one child: args are -config (a JSON RealConfig file),
// -from, -to, -abandon, -mark and -out. With -abandon it writes its
// report and exits the process (status 0) without closing the library or
// the pool, as an app that is killed.
func RealChild(ctx context.Context, args []string) error {
	t0 := time.Now()
	if s := os.Getenv(EnvT0); s != "" {
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("real child: %s=%q: %w", EnvT0, s, err)
		}
		t0 = time.Unix(0, ns)
	}
	rep := RealChildReport{Main: time.Since(t0)}
	fs := flag.NewFlagSet("real-child", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the run's RealConfig (JSON)")
	out := fs.String("out", "", "where to write the report (JSON)")
	fs.IntVar(&rep.Segment.From, "from", 0, "first page")
	fs.IntVar(&rep.Segment.To, "to", 0, "end page (exclusive)")
	fs.BoolVar(&rep.Segment.Abandon, "abandon", false, "exit without Close after the last page")
	fs.StringVar(&rep.Segment.Mark, "mark", "", "what the first page is")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var cfg RealConfig
	b, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fmt.Errorf("real child: %w", err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("real child: config: %w", err)
	}
	if rep.Ablated, err = checkAblation(cfg.Ablate); err != nil {
		return fmt.Errorf("real child: %w", err)
	}
	r, err := openRealRun(ctx, cfg, &rep)
	if err != nil {
		return err
	}
	stop, err := profile(rep.Segment.From)
	if err != nil {
		return err
	}
	runErr := r.pages(ctx, &rep)
	stop()
	rep.End = r.lib.Stats()
	rep.PoolConns = r.pool.DB().Stats().OpenConnections
	if runErr == nil && rep.Segment.Abandon {
		if err := writeJSON(*out, rep); err != nil {
			return err
		}
		os.Exit(0) // no Close: the library and the pool are left as a killed app leaves them
	}
	if err := errors.Join(runErr, r.close(ctx)); err != nil {
		return err
	}
	return writeJSON(*out, rep)
}

// EnvCPUProfile names a directory: each child of the real loop writes a
// CPU profile of its pages there (cpu-<first page>.out).
const EnvCPUProfile = "SYNCBENCH_CPUPROFILE"

// profile starts the child's CPU profile, if EnvCPUProfile asks for one,
// and returns what stops it.
func profile(from int) (stop func(), err error) {
	dir := os.Getenv(EnvCPUProfile)
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.out", from)))
	if err != nil {
		return nil, fmt.Errorf("real child: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("real child: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// realRun is a child's state.
type realRun struct {
	cfg  RealConfig
	gen  *Pages
	pool *AppPool
	lib  *LibIndex
}

// openRealRun replays the pages before the segment, checks the table
// holds what the reference says, opens the pool and then the library.
func openRealRun(ctx context.Context, cfg RealConfig, rep *RealChildReport) (_ *realRun, err error) {
	d, err := DriverNamed(cfg.Driver)
	if err != nil {
		return nil, err
	}
	if err := CheckLibDriver(d); err != nil {
		return nil, err
	}
	r := &realRun{cfg: cfg}
	start := time.Now()
	if r.gen, err = NewPages(cfg.PagesConfig); err != nil {
		return nil, err
	}
	if err := r.gen.Replay(rep.Segment.From); err != nil {
		return nil, err
	}
	rep.Replay = time.Since(start)
	start = time.Now()
	if r.pool, err = OpenAppPool(ctx, d, cfg.DB); err != nil {
		return nil, err
	}
	rep.PoolOpen = time.Since(start)
	defer func() {
		if err != nil {
			err = errors.Join(err, r.close(ctx))
		}
	}()
	if rep.SQLite, err = r.pool.SQLiteVersion(ctx); err != nil {
		return nil, err
	}
	n, err := r.pool.Count(ctx)
	if err != nil {
		return nil, err
	}
	if n != int64(r.gen.Ref.Len()) {
		return nil, fmt.Errorf("real child: the table holds %d rows, the reference %d (pages before %d replayed)", n, r.gen.Ref.Len(), rep.Segment.From)
	}
	start = time.Now()
	if r.lib, err = OpenLib(ctx, d, cfg.DB, cfg.Snapshot, r.pool.DB()); err != nil {
		return nil, err
	}
	rep.LibOpen = time.Since(start)
	rep.Start = r.lib.Stats()
	return r, nil
}

// pages answers the segment's pages.
func (r *realRun) pages(ctx context.Context, rep *RealChildReport) error {
	mark := rep.Segment.Mark
	for n := rep.Segment.From; n < rep.Segment.To; n++ {
		ev, err := r.event(ctx, n)
		if err != nil {
			return err
		}
		if ev != nil {
			rep.Events = append(rep.Events, *ev)
			mark = map[string]string{"add-column": MarkAddColumn, "rebuild": MarkRebuild}[ev.Name]
		}
		p, err := r.page(ctx, n)
		if err != nil {
			return fmt.Errorf("page %d: %w", n, err)
		}
		p.Mark, mark = mark, ""
		rep.Pages = append(rep.Pages, p)
	}
	return nil
}

// event runs the migration due before page n, if any.
func (r *realRun) event(ctx context.Context, n int) (*RealEvent, error) {
	var (
		name string
		took time.Duration
		err  error
	)
	switch n {
	case r.cfg.AddColumnAt:
		name = "add-column"
		took, err = r.pool.AddColumn(ctx)
	case r.cfg.RebuildAt:
		name = "rebuild"
		took, err = r.pool.RebuildTable(ctx)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &RealEvent{Name: name, Page: n, Took: took}, nil
}

// page asks both sides about page n, the side RealConfig.LibFirst names
// first, judges both, waits for the records, stores the page's new ids
// and waits for the next page (RealConfig.After).
func (r *realRun) page(ctx context.Context, n int) (RealPage, error) {
	pg, err := r.gen.Next(n)
	if err != nil {
		return RealPage{}, err
	}
	p := RealPage{Page: n, Kind: pg.Kind, Size: len(pg.IDs), New: len(pg.New), Digest: digest(pg.IDs)}
	inWant := r.gen.Ref.InListTruth(pg.IDs)
	p.InListBlind = Differ(inWant, pg.Want)
	before := r.lib.Stats()
	lib := func() error {
		got, took, allocs, err := r.lib.MissingCounted(ctx, pg.IDs)
		p.Lib, p.LibAllocs = took, allocs
		if err != nil {
			return fmt.Errorf("library: %w", err)
		}
		return Judge("the library", pg.IDs, got, pg.Want)
	}
	inIDs, inTruth := pg.IDs, inWant
	if r.cfg.StoredOnly {
		inIDs, inTruth = storedOnly(pg.IDs, inWant)
	}
	p.InListIDs = len(inIDs)
	in := func() error {
		// Prepared on the first page of its size, untimed, as an app's
		// statement cache does.
		if _, err := r.pool.PrepareInList(ctx, len(inIDs)); err != nil {
			return err
		}
		m0 := Mallocs()
		start := time.Now()
		got, err := r.pool.InList(ctx, inIDs)
		p.InList = time.Since(start)
		p.InListAllocs = Mallocs() - m0
		if err != nil {
			return err
		}
		return Judge("the IN-list", inIDs, got, inTruth)
	}
	sides := [2]func() error{lib, in}
	if !r.cfg.LibFirst {
		sides = [2]func() error{in, lib}
	}
	for _, side := range sides {
		if err := side(); err != nil {
			return p, err
		}
	}
	after := r.lib.Stats()
	p.Bypass, p.FalsePos = after.Bypass-before.Bypass, after.FalsePositives-before.FalsePositives
	p.Serving, p.EstFPR = after.Serving, after.EstimatedFPR
	p.Wait = r.cfg.Wait.For(r.cfg.Seed, n)
	next := time.Duration(float64(p.Wait) * min(max(r.cfg.After, 0), 1))
	if err := sleep(ctx, p.Wait-next); err != nil { // the records' fetch
		return p, err
	}
	if p.Insert, err = r.pool.Store(ctx, pg.New); err != nil {
		return p, err
	}
	r.gen.Stored(pg)
	return p, sleep(ctx, next) // the next page of ids
}

// storedOnly returns the ids of page an IN-list finds stored (want
// false), or the page's first id if it finds none, with their answers.
func storedOnly(page []string, want []bool) (ids []string, truth []bool) {
	for i, id := range page {
		if !want[i] {
			ids, truth = append(ids, id), append(truth, false)
		}
	}
	if len(ids) == 0 && len(page) > 0 {
		return page[:1], want[:1]
	}
	return ids, truth
}

// digest hashes ids in order (FNV-1a, each id ended by a NUL).
func digest(ids []string) uint64 {
	h := fnv.New64a()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *realRun) close(ctx context.Context) error {
	var errs []error
	if r.lib != nil {
		errs = append(errs, r.lib.Close(ctx))
	}
	if r.pool != nil {
		errs = append(errs, r.pool.Close())
	}
	return errors.Join(errs...)
}
