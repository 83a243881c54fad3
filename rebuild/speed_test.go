package rebuild

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGrowingCollectionStaysUseful: a collection that starts with 1,000
// rows and grows to 51,000 through pages of Missing and the app's INSERTs
// ends with an estimated false-positive rate within twice the target,
// without the app ever calling Rebuild; Stats says why it rebuilt.
func TestGrowingCollectionStaysUseful(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, ids("start", 1000)...)
	cfg := appConfig(path)
	ix := open(t, cfg)
	app := rawDB(t, path)
	next := 0
	for total := 1000; total < 51_000; {
		page := ids(fmt.Sprintf("grow%05d", next), 500)
		next++
		missing, err := missingList(ctx, ix, page)
		if err != nil {
			t.Fatal(err)
		}
		insertIDs(t, app, missing...)
		total += len(missing)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := ix.Stats()
		if st.Serving && !st.Rebuilding {
			if st.EstimatedFPR > 2*st.TargetFPR {
				// One more insert re-checks; a rebuild due may still start.
				if time.Now().After(deadline) {
					t.Fatalf("estimated rate %.4f > 2 × %.4f after %d automatic rebuilds", st.EstimatedFPR, st.TargetFPR, st.AutoRebuilds)
				}
			} else {
				if st.AutoRebuilds == 0 || !strings.Contains(st.AutoReason, "estimated false-positive rate") {
					t.Fatalf("no automatic rebuild reported: %d, %q", st.AutoRebuilds, st.AutoReason)
				}
				t.Logf("%d automatic rebuilds; rate %.4f; capacity %d; last: %s", st.AutoRebuilds, st.EstimatedFPR, st.Capacity, st.AutoReason)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no filter serving")
		}
		time.Sleep(10 * time.Millisecond)
	}
	expect(t, ix, set(ids("start", 1000)), append(ids("start", 100), ids("never", 100)...))
}
