package syncbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// InitialOptions configure an initial sync: an empty table filled by
// Pages pages of PageSize new random UUIDs.
type InitialOptions struct {
	Dir      string        // where the database and snapshot go (a temp dir if empty)
	Pages    int           // default 200
	PageSize int           // default 1,000
	Sleep    time.Duration // per page, standing for the network fetch
	Capacity uint64        // the filter's least capacity (rebuild.Source.Capacity); 0 is the default
	NoInList bool          // skip the IN-list side (a heap figure without its garbage)
	// NoLibrary runs the app and the IN-list alone, the library never
	// opened (no triggers on the table): the app's INSERTs without it.
	NoLibrary bool
	Progress  func(PageRecord)
}

// PageRecord is what one page of the initial sync measured.
type PageRecord struct {
	Page       int
	RowsBefore int64
	Missing    time.Duration // the library's Missing
	InList     time.Duration // the prepared IN-list, 0 if skipped
	Insert     time.Duration // the app's INSERT of the page
	Bypass     bool          // Missing answered keys from SQLite alone (no filter served)
	Serving    bool          // after the page: LibStats.Serving
	Rebuilding bool          // after the page: LibStats.Rebuilding
	EstFPR     float64       // after the page: LibStats.EstimatedFPR (0 when not serving)
	// MeasuredFPR is the share of the page's new ids the filter did not
	// rule out (every id is new, so each maybe is a false positive); -1
	// when the page was answered in bypass.
	MeasuredFPR  float64
	Capacity     uint64
	Items        uint64
	Rebuilds     uint64
	AutoRebuilds uint64
	Heap         uint64        // the heap's object bytes at the end of the page (no GC forced)
	End          time.Duration // since the sync started
}

// InitialResult sums up an initial sync.
type InitialResult struct {
	Opts      InitialOptions
	TargetFPR float64
	Open      time.Duration // Open on the empty table (its first scan)
	Pages     []PageRecord

	MissingTotal, InListTotal time.Duration
	OverFPR                   int // serving pages with EstFPR above 2× the target
	MeasuredOver              int // serving pages whose measured rate is above 2× the target
	BypassPages               int
	LongestBypass             int           // pages in the longest run of bypass pages
	LongestBypassTook         time.Duration // its wall time, first page start to last page end
	LastRebuildIn             time.Duration // LibStats.LastRebuildIn at the end
	Rebuilds, AutoRebuilds    uint64

	HeapBase    uint64 // heap objects after a GC, before Open
	HeapPeak    uint64 // highest 1 ms sample over the run
	FilterBytes int64  // the final snapshot file's size (Close saves it)
	FinalCap    uint64
	PeakRSS     uint64
	InsertTotal time.Duration
	Wall        time.Duration
}

// InitialSync runs an initial sync as a sync engine does: the library
// opened with the default Config (Snapshot set) on the app's empty table;
// for each page, Missing (the only library call) and the IN-list in turn
// (the first rotating), then the app's INSERT of the page, then Sleep.
func InitialSync(ctx context.Context, o InitialOptions) (res *InitialResult, err error) {
	if o.Pages == 0 {
		o.Pages = 200
	}
	if o.PageSize == 0 {
		o.PageSize = 1000
	}
	if o.NoLibrary && o.NoInList {
		return nil, fmt.Errorf("initial sync: no side to run (no library, no in-list)")
	}
	if o.Dir == "" {
		if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
			return nil, fmt.Errorf("initial sync: %w", err)
		}
		if o.Dir, err = os.MkdirTemp(CacheDir(), "initial-"); err != nil {
			return nil, fmt.Errorf("initial sync: %w", err)
		}
		defer os.RemoveAll(o.Dir)
	}
	path := filepath.Join(o.Dir, "app.db")
	if err := EmptyDB(ctx, path); err != nil {
		return nil, err
	}
	var in *InList
	if !o.NoInList {
		if in, err = OpenInList(path); err != nil {
			return nil, err
		}
		defer in.Close()
		if _, err := in.Prepare(ctx, o.PageSize); err != nil {
			return nil, err
		}
	}
	app, err := OpenApp(path)
	if err != nil {
		return nil, err
	}
	defer app.Close()

	res = &InitialResult{Opts: o, HeapBase: HeapNow()}
	heap := StartHeapSampler()
	defer heap.Stop()
	begin := time.Now()
	snapshot := path + ".sfb"
	var ix *LibIndex
	if !o.NoLibrary {
		if ix, err = openLibSized(ctx, DefaultDriver(), path, snapshot, o.Capacity); err != nil {
			return nil, fmt.Errorf("initial sync: %w", err)
		}
		res.Open = time.Since(begin)
		defer func() {
			if ix != nil {
				_ = ix.Close(context.Background())
			}
		}()
	}
	stats := func() LibStats {
		if ix == nil {
			return LibStats{}
		}
		return ix.Stats()
	}
	res.TargetFPR = stats().TargetFPR

	next := uint64(0) // the ids are RandomUUID's 0, 1, 2, … (the table starts empty)
	prev := stats()
	for p := 0; p < o.Pages; p++ {
		page := make([]string, o.PageSize)
		for i := range page {
			page[i] = RandomUUID.ID(next)
			next++
		}
		r := PageRecord{Page: p, RowsBefore: int64(p * o.PageSize)}
		lib := func() error {
			ans, took, err := ix.Missing(ctx, page)
			r.Missing = took
			return check("library", missingIDs(page, ans), page, err)
		}
		base := func() error {
			start := time.Now()
			got, err := in.Missing(ctx, page)
			r.InList = time.Since(start)
			return check("in-list", got, page, err)
		}
		var sides []func() error
		if ix != nil {
			sides = append(sides, lib)
		}
		if in != nil {
			sides = append(sides, base)
		}
		for k := range sides {
			if err := sides[(p+k)%len(sides)](); err != nil {
				return nil, fmt.Errorf("initial sync: page %d: %w", p, err)
			}
		}
		st := stats()
		r.Bypass = st.Bypass > prev.Bypass
		r.Serving, r.Rebuilding, r.EstFPR = st.Serving, st.Rebuilding, st.EstimatedFPR
		r.MeasuredFPR = -1
		if !r.Bypass {
			r.MeasuredFPR = float64(st.FalsePositives-prev.FalsePositives) / float64(o.PageSize)
		}
		r.Capacity, r.Items, r.Rebuilds, r.AutoRebuilds = st.Capacity, st.Items, st.Rebuilds, st.AutoRebuilds
		prev = st
		if r.Insert, err = app.Store(ctx, page); err != nil {
			return nil, fmt.Errorf("initial sync: page %d: %w", p, err)
		}
		if o.Sleep > 0 {
			select {
			case <-time.After(o.Sleep):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		r.End = time.Since(begin)
		r.Heap = HeapObjects()
		res.Pages = append(res.Pages, r)
		if o.Progress != nil {
			o.Progress(r)
		}
	}
	st := stats()
	res.LastRebuildIn, res.Rebuilds, res.AutoRebuilds, res.FinalCap = st.LastRebuildIn, st.Rebuilds, st.AutoRebuilds, st.Capacity
	res.Wall = time.Since(begin)
	if ix != nil {
		err := ix.Close(ctx)
		if ix = nil; err != nil {
			return nil, fmt.Errorf("initial sync: %w", err)
		}
	}
	res.HeapPeak = heap.Stop()
	res.PeakRSS = PeakRSS()
	if fi, err := os.Stat(snapshot); err == nil {
		res.FilterBytes = fi.Size()
	}
	res.sum()
	return res, nil
}

// sum fills in the totals from the pages.
func (res *InitialResult) sum() {
	run, runStart := 0, time.Duration(0)
	for i, r := range res.Pages {
		res.MissingTotal += r.Missing
		res.InListTotal += r.InList
		res.InsertTotal += r.Insert
		if !r.Bypass && r.EstFPR > 2*res.TargetFPR {
			res.OverFPR++
		}
		if !r.Bypass && r.MeasuredFPR > 2*res.TargetFPR {
			res.MeasuredOver++
		}
		if !r.Bypass {
			run = 0
			continue
		}
		res.BypassPages++
		if run == 0 {
			runStart = 0
			if i > 0 {
				runStart = res.Pages[i-1].End
			}
		}
		run++
		if run > res.LongestBypass {
			res.LongestBypass, res.LongestBypassTook = run, r.End-runStart
		}
	}
}
