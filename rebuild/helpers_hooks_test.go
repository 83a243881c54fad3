package rebuild

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncfilter/syncfilter/rebuild/internal/store"
)

// A test's hooks into its database, and the gates and counters built on
// them.

// hooks are a test's hooks into one database, which it may set and clear
// after opening it: the database's knobs call through them (knobsOf).
type hooks struct {
	scanRow      atomic.Pointer[func(n int64) error]
	beforeCount  atomic.Pointer[func() error]
	catchUpChunk atomic.Pointer[func()]
}

// knobsOf returns k with its hooks calling through h.
func (h *hooks) knobsOf(k knobs) knobs {
	k.scanRow = func(n int64) error {
		if f := h.scanRow.Load(); f != nil {
			return (*f)(n)
		}
		return nil
	}
	k.beforeCount = func() error {
		if f := h.beforeCount.Load(); f != nil {
			return (*f)()
		}
		return nil
	}
	k.catchUpChunk = func() {
		if f := h.catchUpChunk.Load(); f != nil {
			(*f)()
		}
	}
	return k
}

// hooked returns cfg with its database's hooks calling through a new
// hooks value, and that value.
func hooked(cfg config) (config, *hooks) {
	h := &hooks{}
	cfg.knobs = h.knobsOf(cfg.knobs)
	return cfg, h
}

// scanGate makes the next scan of the database whose hooks hk are wait
// after its first chunk of keys (every row, when the table fits in one)
// until release is called; entered is closed when it waits. The test's
// cleanup releases it too, before the index closes, so that a failure
// leaves no scan waiting.
func scanGate(t testing.TB, hk *hooks) (entered <-chan struct{}, release func()) {
	gate, in := make(chan struct{}), make(chan struct{})
	var once, rel sync.Once
	release = func() { rel.Do(func() { close(gate) }) }
	t.Cleanup(release)
	hk.scanRow.Store(ptr(func(n int64) error {
		if n > 0 {
			once.Do(func() { close(in); <-gate })
		}
		return nil
	}))
	return in, release
}

// waitClosed waits for ch to be closed (a generous bound turns a hang
// into a failure).
func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(callBound):
		t.Fatalf("%s: not reached after %v", what, callBound)
	}
}

// blockCatchUp returns cfg with its catch-ups parking at their first
// chunk while block is set (entered closes then; release lets them go).
func blockCatchUp(cfg config) (_ config, block *atomic.Bool, entered, release chan struct{}) {
	block = new(atomic.Bool)
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfg.knobs.store = store.Knobs{LogChunk: 16}
	cfg.knobs.catchUpChunk = func() {
		if block.Load() {
			once.Do(func() { close(entered) })
			<-release
		}
	}
	return cfg, block, entered, release
}
