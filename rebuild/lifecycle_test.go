package rebuild

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestNoGoroutineOutlivesClose opens and closes the index many times with
// queries in flight (and background rebuilds started by dropped filters):
// afterwards no goroutine is left.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, ids("seed", 2000)...)
	cfg := appConfig(path)
	warm := open(t, cfg) // first attach and snapshot, outside the count
	if err := warm.Close(ctx); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()
	probe := append(ids("seed", 100), ids("never", 100)...)
	for cycle := range 30 {
		ix, err := Open(ctx, cfg.DBConfig, cfg.Source)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for q := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var err error
					if q%2 == 0 {
						_, err = missingList(ctx, ix, probe)
					} else {
						_, err = ix.Fetched(ctx, probe[q])
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("query: %v", err)
						return
					}
				}
			}()
		}
		if cycle%3 == 0 {
			go func() { _ = ix.Rebuild(ctx) }() // a rebuild in flight too
		}
		time.Sleep(2 * time.Millisecond)
		if err := ix.Close(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
