package rebuild

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const hammerEnv = "SYNCFILTER_REBUILD_HAMMER_DB"

// TestChildProcessHammers is not a test: it is the writing process of
// TestFreshnessUnderAHammeringWriter. It commits one id per transaction,
// in order, as fast as it can.
func TestChildProcessHammers(t *testing.T) {
	path := os.Getenv(hammerEnv)
	if path == "" {
		t.Skip("child process of TestFreshnessUnderAHammeringWriter")
	}
	n, _ := strconv.Atoi(os.Getenv(hammerEnv + "_N"))
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	for i := range n {
		mustExec(t, db, `INSERT INTO records (id) VALUES (?)`, fmt.Sprintf("hammer-%07d", i))
	}
}

// TestFreshnessUnderAHammeringWriter: while another process commits in a
// tight loop, every id committed before a call is reported fetched, by
// Fetched and by Missing.
func TestFreshnessUnderAHammeringWriter(t *testing.T) {
	ctx := context.Background()
	path := appDB(t, ids("seed", 1000)...)
	ix := open(t, appConfig(path))
	const n = 3000
	wait := startChild(t, "TestChildProcessHammers", hammerEnv+"="+path, hammerEnv+"_N="+strconv.Itoa(n))
	done := make(chan error, 1)
	var out string
	go func() {
		var err error
		out, err = wait()
		done <- err
	}()
	reader := rawDB(t, path)
	checked, wrong := 0, 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer: %v\n%s", err, out)
			}
			running = false
		default:
		}
		var last sql.NullString
		if err := reader.QueryRow(`SELECT max(id) FROM records WHERE id LIKE 'hammer-%'`).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if !last.Valid {
			continue
		}
		top, _ := strconv.Atoi(strings.TrimPrefix(last.String, "hammer-"))
		// Every id up to top was committed before the calls below began.
		ok, err := ix.Fetched(ctx, last.String)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			wrong++
		}
		var page []string
		for i := max(0, top-20); i <= top; i++ {
			page = append(page, fmt.Sprintf("hammer-%07d", i))
		}
		page = append(page, fmt.Sprintf("hammer-%07d", top+n)) // never written
		missing, err := missingList(ctx, ix, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) != 1 || missing[0] != page[len(page)-1] {
			wrong++
		}
		checked++
	}
	if wrong > 0 {
		t.Fatalf("%d of %d checks reported committed ids missing", wrong, checked)
	}
	if st := ix.Stats(); checked < 10 || st.CaughtUp == 0 {
		t.Fatalf("%d checks, %d log entries caught up: the test proves nothing", checked, st.CaughtUp)
	}
	t.Logf("%d checks", checked)
}

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
