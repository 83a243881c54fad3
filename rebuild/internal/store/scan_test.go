package rebuild

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestChunkedScanReadsWhatRowsRead: the chunked scan hands over exactly
// the keys, duplicates included, and counts exactly the NULL and BLOB ids,
// that reading row by row does: keys of every single byte (invalid UTF-8
// included), every byte JSON escapes, the empty key, runs of one key longer
// than a chunk, random byte strings; at chunk sizes that cut everywhere.
func TestChunkedScanReadsWhatRowsRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE t (id TEXT, body TEXT)`)
	mustExec(t, db, `CREATE INDEX t_id ON t (id)`)
	var keys []string
	for b := 0; b < 256; b++ {
		keys = append(keys, string([]byte{byte(b)}), fmt.Sprintf("k%cz", b))
	}
	keys = append(keys, "", "", `quote"back\slash/`, "\u2028\u2029", "😀\U0010fffd", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\x00b")
	for range 50 {
		keys = append(keys, "dup") // a run longer than the small chunks
	}
	for i := range 3 { // longer than a small chunkBytes, alone
		keys = append(keys, strings.Repeat("L", 5000)+fmt.Sprint(i), strings.Repeat("L", 5000)+fmt.Sprint(i))
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		keys = append(keys, string(b))
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, k); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (NULL)`); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range [][]byte{{}, {0}, {0xff}, []byte("blob")} {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	ix := open(t, Config{Path: path, Table: "t", Column: "id"})
	read := func(t *testing.T, chunked bool) (got []string, nulls, blobs int64) {
		t.Helper()
		old := noChunkedScan
		noChunkedScan = !chunked
		defer func() { noChunkedScan = old }()
		nulls, blobs, _, err := ix.st.scan(ctx, scanHooks{
			begin: func(uint64, int64) error { return nil },
			row:   func(k string) error { got = append(got, k); return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got, nulls, blobs
	}
	want, wantNulls, wantBlobs := read(t, false)
	if len(want) != len(keys) || wantNulls != 3 || wantBlobs != 4 {
		t.Fatalf("row by row: %d keys, %d NULL, %d BLOB; inserted %d, 3, 4", len(want), wantNulls, wantBlobs, len(keys))
	}
	for _, tc := range []struct {
		size, bytes int
		fewer, rest bool // the paths the case must take
	}{
		{1, chunkBytes, false, false}, {7, chunkBytes, false, false}, {50, chunkBytes, false, false},
		{51, chunkBytes, false, false}, {4096, chunkBytes, false, false},
		{4096, 20_000, true, false}, // chunks asked again with fewer keys
		{4096, 2_000, true, true},   // a key longer than a chunk: the rest row by row
	} {
		t.Run(fmt.Sprintf("chunk=%d,bytes=%d", tc.size, tc.bytes), func(t *testing.T) {
			oldSize, oldBytes := scanChunk, chunkBytes
			scanChunk, chunkBytes = tc.size, tc.bytes
			events := map[string]int{}
			testHookChunk = func(e string) { events[e]++ }
			defer func() { scanChunk, chunkBytes, testHookChunk = oldSize, oldBytes, nil }()
			if !chunkable(t, ix) {
				t.Fatal("the paging statement does not walk the index: the chunked path is not under test")
			}
			got, nulls, blobs := read(t, true)
			if (events["fewer"] > 0) != tc.fewer || (events["rest"] > 0) != tc.rest {
				t.Fatalf("paths taken %v, want fewer %v, rest %v", events, tc.fewer, tc.rest)
			}
			if nulls != wantNulls || blobs != wantBlobs {
				t.Fatalf("%d NULL, %d BLOB; want %d, %d", nulls, blobs, wantNulls, wantBlobs)
			}
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("%d keys, want %d; first difference at %d: %+q, want %+q", len(got), len(want), i, got[i], want[i])
					}
				}
				t.Fatalf("%d keys, want %d", len(got), len(want))
			}
		})
	}
}

// TestChunkedScanNeedsTheIndex: without an index on the column, SQLite
// would sort for every chunk, so the scan reads row by row.
func TestChunkedScanNeedsTheIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE t (id TEXT, body TEXT)`)
	for _, k := range ids("k", 100) {
		mustExec(t, db, `INSERT INTO t (id) VALUES (?)`, k)
	}
	ix := open(t, Config{Path: path, Table: "t", Column: "id", AllowUnindexed: true})
	if chunkable(t, ix) {
		t.Fatal("an unindexed column's paging statement reported as walking an index")
	}
	if err := ix.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if missing, err := ix.Missing(ctx, ids("k", 100)); err != nil || len(missing) != 0 {
		t.Fatalf("missing %d, %v", len(missing), err)
	}
}

// chunkable reports whether SQLite walks the index for ix's paging
// statement.
func chunkable(t *testing.T, ix *Index) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := ix.st.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ok bool
	if err := conn.Raw(func(dc any) error {
		ok = walksIndex(ctx, dc.(driver.ConnPrepareContext), chunkPage(ix.st))
		_, limits := dc.(limiter)
		ok = ok && limits
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ok
}

// FuzzKeyArrayRoundTrip: whatever bytes a key holds, the JSON array SQLite
// writes for it (json_group_array over a text value) reads back as exactly
// those bytes.
func FuzzKeyArrayRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b", `q"b\s/`, "\x01\x1f\x7f", "\u2028", "\xff\xfe", "\xed\xa0\x80", "😀"} {
		f.Add(s, "second")
	}
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	f.Fuzz(func(t *testing.T, a, b string) {
		var list string
		if err := db.QueryRow(`SELECT json_group_array(v) FROM (SELECT CAST(?1 AS TEXT) AS v UNION ALL SELECT CAST(?2 AS TEXT))`, a, b).Scan(&list); err != nil {
			t.Fatal(err)
		}
		got, err := parseKeyArray(list, nil)
		if err != nil {
			t.Fatalf("parse %q: %v", list, err)
		}
		if len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("%+q, %+q came back as %+q (from %q)", a, b, got, list)
		}
	})
}
