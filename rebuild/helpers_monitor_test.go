package rebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Watching the process: a watchdog over calls in flight (monitor), and
// counts of the goroutines and open descriptors. The goroutine counts are
// the whole process's: a test that takes them runs serially (no
// t.Parallel), and Go runs every parallel test after the serial ones.

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

// openFiles counts this process's open descriptors on the database's
// files (the database, -wal, -shm, -journal): one per SQLite connection
// for the database itself.
func openFiles(t *testing.T, path string) (db, all int) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd here: %v", err)
	}
	real, _ := filepath.EvalSymlinks(path)
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue
		}
		switch {
		case target == real:
			db++
			all++
		case strings.HasPrefix(target, real+"-"):
			all++
		}
	}
	return db, all
}

// goroutines returns the goroutine count once it has settled.
func goroutines() int {
	var n int
	for range 50 {
		runtime.GC()
		n = runtime.NumGoroutine()
		time.Sleep(2 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			return n
		}
	}
	return n
}
