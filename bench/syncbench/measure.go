package syncbench

import (
	"bufio"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Median returns the median of ds (the mean of the middle two for an
// even count), 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Sum returns the sum of ds.
func Sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// Ratio returns a ÷ b, 0 if b is 0.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Mallocs returns the process's heap allocations so far
// (runtime.MemStats.Mallocs; ReadMemStats stops the world briefly).
func Mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// Allocs reads this process's allocation counters (runtime/metrics, no
// stop-the-world), to count what one call allocates.
type Allocs struct {
	s [2]metrics.Sample
}

// NewAllocs returns a reader of the cumulative allocation counters.
func NewAllocs() *Allocs {
	a := &Allocs{}
	a.s[0].Name = "/gc/heap/allocs:objects"
	a.s[1].Name = "/gc/heap/allocs:bytes"
	return a
}

// Read returns the objects and bytes allocated so far.
func (a *Allocs) Read() (objects, bytes uint64) {
	metrics.Read(a.s[:])
	return a.s[0].Value.Uint64(), a.s[1].Value.Uint64()
}

// HeapSampler records the peak of the Go heap's object bytes
// (runtime/metrics "/memory/classes/heap/objects:bytes": live objects and
// those not yet swept), sampled every millisecond by a goroutine. SQLite's
// own memory (C allocations) is not in it: see PeakRSS.
type HeapSampler struct {
	stop chan struct{}
	once sync.Once
	done sync.WaitGroup

	mu   sync.Mutex
	peak uint64
	at   time.Time
}

const heapObjects = "/memory/classes/heap/objects:bytes"

// HeapNow returns the heap's object bytes after a full collection.
func HeapNow() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// HeapObjects returns the heap's object bytes now, without a collection.
func HeapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// StartHeapSampler starts sampling.
func StartHeapSampler() *HeapSampler {
	h := &HeapSampler{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			h.note(s[0].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *HeapSampler) note(v uint64) {
	h.mu.Lock()
	if v > h.peak {
		h.peak, h.at = v, time.Now()
	}
	h.mu.Unlock()
}

// Peak returns the highest sample so far and when it was taken.
func (h *HeapSampler) Peak() (uint64, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak, h.at
}

// Stop ends the sampling (once; later calls only wait) and returns the peak.
func (h *HeapSampler) Stop() uint64 {
	h.once.Do(func() { close(h.stop) })
	h.done.Wait()
	p, _ := h.Peak()
	return p
}

// PeakRSS returns the process's peak resident set (VmHWM, Linux), 0 if
// unknown: the Go heap, SQLite's memory and touched file mappings.
func PeakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
