package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestScanSpellingsFindsKeysWithNUL: a stored key with a NUL before its
// first non-ASCII character is handed over (GLOB would stop at the NUL),
// and ASCII keys are not.
func TestScanSpellingsFindsKeysWithNUL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, app := testDB(t, `CREATE TABLE t (id TEXT PRIMARY KEY)`)
	want := []string{"nul\x00x/Sa\u0303o", "\x00\u00e9", "caf\u00e9", "a\x01\x1f\x7f\u0301", "\xed\xa0\x80"}
	for _, k := range append(slices.Clone(want), "plain", "ctl\x01\x1f\x7f") {
		if _, err := app.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	s := attach(t, db, "t", "id", false)
	c, err := db.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Release(c)
	var got []string
	if err := db.ScanSpellings(ctx, s, func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(distinct(got), distinct(want)) {
		t.Fatalf("got %+q, want %+q", distinct(got), distinct(want))
	}
}

// TestSpellingsScansLeaveTheReadersTheirConnections: however many
// indexes scan for stored spellings at once (one source each, every scan
// parked inside its read), a reader and the data_version connection are
// still handed out: the scans take their turn, one connection beside the
// readers between them. (Without the turn, four parked scans and the
// data_version read took every connection the pool may open, and a
// reader waited for a scan of another collection.)
func TestSpellingsScansLeaveTheReadersTheirConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var schema []string
	for i := range 6 {
		schema = append(schema, fmt.Sprintf(`CREATE TABLE t%d (id TEXT PRIMARY KEY)`, i),
			fmt.Sprintf(`INSERT INTO t%d (id) VALUES ('caf%s')`, i, "e\u0301"))
	}
	db, _ := testDB(t, schema...)
	var srcs []*Source
	for i := range 6 {
		srcs = append(srcs, attach(t, db, fmt.Sprintf("t%d", i), "id", false))
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(release); wg.Wait() }()
	inside := make(chan struct{}, len(srcs))
	for _, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = db.ScanSpellings(ctx, s, func(string) error { inside <- struct{}{}; <-release; return nil })
		}()
	}
	<-inside // one scan holds its connection
	// Time for the others to take theirs, if they could (they must not).
	time.Sleep(200 * time.Millisecond)
	if n := len(inside); n > 0 {
		t.Fatalf("%d more scans for spellings read at once", n)
	}
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := db.DataVersion(bounded); err != nil {
		t.Fatalf("data_version while scans for spellings wait: %v", err)
	}
	var readers []*Conn
	for range cap(db.pool.sem) {
		c, err := db.Reader(bounded)
		if err != nil {
			t.Fatalf("a reader while scans for spellings wait: %v", err)
		}
		readers = append(readers, c)
	}
	for _, c := range readers {
		db.Release(c)
	}
}
