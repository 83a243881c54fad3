package rebuild

import (
	"sync/atomic"
	"time"
)

// costs are what the index measured its two exact ways of answering
// about keys the filter rules out while it is behind the log to cost
// (per entry taken in, per key confirmed in SQLite): a call compares them
// (budget), with what the measures say on this database, driver and
// machine, never with constants tuned elsewhere.
type costs struct {
	entry cost // reading a log entry, its canonical form and its bits
	key   cost // confirming a key in SQLite (of a page's statement)
}

// cost is a smoothed time per unit, in nanoseconds (0: not measured yet).
type cost struct{ ns atomic.Int64 }

// minUnits is the least units an observation needs to count: a
// statement's fixed cost would otherwise pass for a unit's.
const minUnits = 16

// observe folds d for n units in.
func (c *cost) observe(d time.Duration, n uint64) {
	if n < minUnits {
		return
	}
	per := d.Nanoseconds() / int64(n)
	for {
		old := c.ns.Load()
		v := per
		if old > 0 {
			v = (7*old + per) / 8
		}
		if c.ns.CompareAndSwap(old, v) {
			return
		}
	}
}

// budget is how many log entries a call with ruledOut keys the filter
// ruled out takes in rather than confirm those keys in SQLite: as many
// as cost what confirming them would, at most limit. Until both costs are
// measured, a call takes a chunk in (limit) when it rules keys out: the
// measures come from doing both.
func (c *costs) budget(ruledOut, limit int) int {
	if ruledOut == 0 {
		return 0
	}
	e, k := c.entry.ns.Load(), c.key.ns.Load()
	if e <= 0 || k <= 0 {
		return limit
	}
	return int(min(int64(limit), int64(ruledOut)*k/e))
}
