package rebuild

import (
	"slices"
	"sync"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// worker is the database's one background goroutine (not started for a
// read-only database). In this order, it loads the snapshots of the
// indexes DB.Index opened, writes the holds of new indexes
// (syncfilter_holders: they tell Detach that a source is in use; a write,
// kept off the open path), and runs the rebuilds the collections ask for
// (a snapshot refused at open, a filter dropped, a filter due, triggers
// found lost), one at a time and in the order asked; every third of a
// lease's term it renews the holds. Close stops it: the rebuild in
// progress is cancelled, and the loop returns.
type worker struct {
	mu     sync.Mutex  // guards jobs
	jobs   [jobs]queue // by kind, in the order they run
	wakeup chan struct{}
}

// A job's kind; the worker runs every load before any hold, every hold
// before any rebuild.
const (
	jobLoad = iota
	jobHold
	jobRebuild
	jobs
)

// queue is the collections waiting for one kind of job, each once.
type queue []*Index

func newWorker() *worker { return &worker{wakeup: make(chan struct{}, 1)} }

// ask queues a job of kind for ix (once, however often asked before it
// runs).
func (w *worker) ask(kind int, ix *Index) {
	w.mu.Lock()
	if q := &w.jobs[kind]; !slices.Contains(*q, ix) {
		*q = append(*q, ix)
	}
	w.mu.Unlock()
	w.wake()
}

func (w *worker) wake() {
	select {
	case w.wakeup <- struct{}{}:
	default:
	}
}

// next returns the next job to run, or nil if none is queued.
func (w *worker) next() (kind int, ix *Index) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for kind := range w.jobs {
		if q := &w.jobs[kind]; len(*q) > 0 {
			ix = (*q)[0]
			*q = (*q)[1:]
			return kind, ix
		}
	}
	return 0, nil
}

// run is the worker's loop; db.act counts it.
func (w *worker) run(db *DB) {
	defer db.act.leave()
	renew := time.NewTicker(store.LeaseTerm / 3)
	defer renew.Stop()
	for {
		select {
		case <-db.ctx.Done():
			return
		case <-w.wakeup:
		case <-renew.C:
			db.renewHolds()
		}
		for kind, ix := w.next(); ix != nil && db.ctx.Err() == nil; kind, ix = w.next() {
			switch kind {
			case jobLoad:
				ix.backgroundLoad()
			case jobHold:
				ix.renewHold()
			case jobRebuild:
				ix.background()
			}
		}
	}
}

// renewHolds renews the holds of every open index of the database.
func (db *DB) renewHolds() {
	db.mu.Lock()
	list := make([]*Index, 0, len(db.indexes))
	for ix := range db.indexes {
		list = append(list, ix)
	}
	db.mu.Unlock()
	for _, ix := range list {
		ix.renewHold()
	}
}
