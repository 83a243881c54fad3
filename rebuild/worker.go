package rebuild

import (
	"slices"
	"sync"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// worker is the database's one background goroutine (not started for a
// read-only database). It runs the rebuilds the collections ask for (a
// snapshot refused at open, a filter dropped, a filter due, triggers found
// lost), one at a time and in the order asked, and writes and renews the
// database's holds on its sources (syncfilter_holders), which tell Detach
// that the sources are in use: a write, kept off the open path. Close stops it: the rebuild in progress is
// cancelled, and the loop returns.
type worker struct {
	mu     sync.Mutex // guards queue and holds
	queue  []*Index   // collections waiting for a rebuild, each once
	holds  []*Index   // collections whose hold is to be written (off the open path)
	loads  []*Index   // collections whose snapshot is to be loaded (DB.Index)
	wakeup chan struct{}
}

func newWorker() *worker { return &worker{wakeup: make(chan struct{}, 1)} }

// ask queues a rebuild of ix (once, however often asked before it runs).
func (w *worker) ask(ix *Index) {
	w.mu.Lock()
	if !slices.Contains(w.queue, ix) {
		w.queue = append(w.queue, ix)
	}
	w.mu.Unlock()
	w.wake()
}

// askHold queues the writing of ix's hold.
func (w *worker) askHold(ix *Index) {
	w.mu.Lock()
	if !slices.Contains(w.holds, ix) {
		w.holds = append(w.holds, ix)
	}
	w.mu.Unlock()
	w.wake()
}

// askLoad queues the opening load of ix.
func (w *worker) askLoad(ix *Index) {
	w.mu.Lock()
	w.loads = append(w.loads, ix)
	w.mu.Unlock()
	w.wake()
}

// nextLoad returns the next load to run, or nil.
func (w *worker) nextLoad() *Index {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.loads) == 0 {
		return nil
	}
	ix := w.loads[0]
	w.loads = w.loads[1:]
	return ix
}

// takeHolds returns the holds to write.
func (w *worker) takeHolds() []*Index {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.holds
	w.holds = nil
	return h
}

func (w *worker) wake() {
	select {
	case w.wakeup <- struct{}{}:
	default:
	}
}

func (w *worker) next() *Index {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	ix := w.queue[0]
	w.queue = w.queue[1:]
	return ix
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
		for ix := w.nextLoad(); ix != nil && db.ctx.Err() == nil; ix = w.nextLoad() {
			ix.backgroundLoad()
		}
		for _, ix := range w.takeHolds() {
			ix.renewHold()
		}
		for ix := w.next(); ix != nil && db.ctx.Err() == nil; ix = w.next() {
			ix.background()
			for _, ix := range w.takeHolds() {
				ix.renewHold()
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
