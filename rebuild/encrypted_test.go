package rebuild

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncfilter/syncfilter/internal/testdriver"
	"golang.org/x/text/unicode/norm"
)

// TestEncrypted: an app whose database is encrypted (ncruces/go-sqlite3
// with its adiantum or xts VFS, the key in the URI; SQLCipher through
// mutecomm/go-sqlcipher/v4, a raw key or a passphrase in _pragma_key)
// hands the key over in DBConfig.ConnParams and syncs through the
// README's loop with exact answers, in WAL and DELETE mode; a Close and
// an OpenDB again load the saved snapshot, answers still exact. A wrong
// or missing key is ErrBadConfig at OpenDB, every file left as it was.
// No file beside the database holds the key or a stored id, and the
// database's own files hold no stored id in clear.
func TestEncrypted(t *testing.T) {
	setups := encryptedSetups()
	if len(setups) == 0 {
		t.Skip("the encrypting drivers are ncruces/go-sqlite3 with its VFSes and go-sqlcipher (make drivers)")
	}
	for _, e := range setups {
		for _, mode := range []string{"wal", "delete"} {
			t.Run(e.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				encryptedSync(t, e, mode)
			})
		}
		t.Run(e.name+"/own-table", func(t *testing.T) {
			t.Parallel()
			encryptedOwnTable(t, e)
		})
	}
}

// encryptedSetup is one way an app encrypts its database: the connection
// parameters that carry the key, the key as a test looks for it in the
// files, and parameters that open the file with a wrong key or none.
type encryptedSetup struct {
	name   string
	params url.Values
	key    string // hex
	wrong  []url.Values
	rekey  url.Values // the parameters after PRAGMA rekey to their _pragma_key (nil: not tried)
	newKey string     // that key, hex
}

// encryptedSetups are the setups of the tests' driver.
func encryptedSetups() []encryptedSetup {
	wrong := []byte(testKey)
	wrong[0] ^= 1
	switch testdriver.Name() {
	case "ncruces":
		var out []encryptedSetup
		for _, vfs := range []string{"adiantum", "xts"} {
			out = append(out, encryptedSetup{vfs, url.Values{"vfs": {vfs}, "hexkey": {testKey}}, testKey,
				[]url.Values{{"vfs": {vfs}, "hexkey": {string(wrong)}}, {"vfs": {vfs}}, nil}, nil, ""})
		}
		return out
	case "sqlcipher":
		pass := "correct horse battery staple"
		return []encryptedSetup{
			{"sqlcipher-raw", url.Values{"_pragma_key": {"x'" + testKey + "'"}, "_pragma_cipher_page_size": {"4096"}}, testKey,
				[]url.Values{{"_pragma_key": {"x'" + string(wrong) + "'"}, "_pragma_cipher_page_size": {"4096"}}},
				url.Values{"_pragma_key": {"x'" + strings.Repeat("5a", 32) + "'"}, "_pragma_cipher_page_size": {"4096"}}, strings.Repeat("5a", 32)},
			{"sqlcipher-passphrase", url.Values{"_pragma_key": {pass}}, hex.EncodeToString([]byte(pass)),
				[]url.Values{{"_pragma_key": {pass + "!"}}, nil}, url.Values{"_pragma_key": {"another passphrase"}}, hex.EncodeToString([]byte("another passphrase"))},
		}
	}
	return nil
}

// encryptedOwnTable: the library's own table creates the database,
// encrypted with the key of DBConfig.ConnParams.
func encryptedOwnTable(t *testing.T, e encryptedSetup) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "own.db")
	cfg := DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: e.params}
	src := Source{Snapshot: path + ".sfb"}
	fetched := ids("secret-own", 50)
	ix, err := Open(ctx, cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.MarkFetched(ctx, fetched...); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ix, err = Open(ctx, cfg, src); err != nil {
		t.Fatal(err)
	}
	waitServing(t, ix)
	page := append(ids("secret-own", 60), ids("secret-other", 10)...)
	missing, err := ix.Missing(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range page {
		if want := i >= 50; missing[i] != want {
			t.Fatalf("Missing(%q) = %v, want %v", id, missing[i], want)
		}
	}
	if err := ix.Close(ctx); err != nil {
		t.Fatal(err)
	}
	noLeak(t, dir, path, e.key, fetched)
	if _, err := Open(ctx, DBConfig{Path: path, Driver: testdriver.Driver()}, src); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("Open without the key: %v, want ErrBadConfig", err)
	}
}

// encryptedApp opens path as an app on the tests' driver does, with the
// parameters that carry its key.
func encryptedApp(t testing.TB, path, mode string, params url.Values) *sql.DB {
	t.Helper()
	dsn := testdriver.DSN(testdriver.Name(), path, testdriver.App{JournalMode: mode}) + "&" + params.Encode()
	db, err := testdriver.OpenDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func encryptedSync(t *testing.T, e encryptedSetup, mode string) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	key, params := e.key, e.params
	app := encryptedApp(t, path, mode, params)
	mustExec(t, app, `CREATE TABLE messages (id TEXT PRIMARY KEY, body TEXT)`)

	// The app's table, and the reference: the canonical forms it holds.
	stored := map[string]bool{} // NFC forms
	var spellings []string      // as inserted
	insert := func(id string) {
		t.Helper()
		if _, err := app.ExecContext(ctx, `INSERT INTO messages (id, body) VALUES (?, 'x')`, id); err != nil {
			t.Fatalf("INSERT %q: %v", id, err)
		}
		stored[norm.NFC.String(id)] = true
		spellings = append(spellings, id)
	}
	for i := range 200 {
		insert(fmt.Sprintf("secret-msg-%06d", i))
	}
	for i := range 5 { // stored in NFD and with a KELVIN SIGN
		insert(fmt.Sprintf("cafe\u0301-secret-%d", i))
		insert(fmt.Sprintf("\u212a-secret-%d", i))
	}

	cfg := DBConfig{Path: path, DB: app, ConnParams: params}
	src := Source{Table: "messages", Column: "id", Snapshot: path + ".messages.id.sfb"}
	// judge asks page as the README's loop does, checks every position
	// against the reference and fetches what is missing.
	judge := func(ix *Index, page []string, fetch bool) {
		t.Helper()
		missing, err := ix.Missing(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range page {
			if want := !stored[norm.NFC.String(id)]; missing[i] != want {
				t.Fatalf("Missing(%q) = %v, want %v", id, missing[i], want)
			}
		}
		for i, id := range page {
			if fetch && missing[i] && !stored[norm.NFC.String(id)] {
				insert(id)
			}
		}
	}
	page := func(p int) []string {
		var out []string
		for i := range 20 {
			switch i % 4 {
			case 0: // stored
				out = append(out, spellings[(p*7+i)%len(spellings)])
			case 1: // new, some asked twice in the page
				out = append(out, fmt.Sprintf("secret-new-%03d-%02d", p, i/8))
			case 2: // other spellings of stored ids
				out = append(out, fmt.Sprintf("caf\u00e9-secret-%d", p%5), fmt.Sprintf("K-secret-%d", p%7))
			default: // never stored
				out = append(out, fmt.Sprintf("secret-never-%03d-%02d", p, i))
			}
		}
		return out
	}

	db, err := OpenDB(ctx, cfg)
	if err != nil {
		t.Fatalf("OpenDB of an %s database with its key: %v", e.name, err)
	}
	ix, err := db.Index(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	for p := range 30 {
		if p == 10 {
			waitServing(t, ix)
		}
		judge(ix, page(p), true)
	}
	if st := ix.Stats(); !st.Serving || st.LookupsAvoided == 0 {
		t.Fatalf("no filter answered: %+v", st)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Again, from the snapshot saved at Close.
	db, err = OpenDB(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ix, err = db.Index(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	waitServing(t, ix)
	if st := stats(ix); st.Rebuilds != 0 || st.SnapshotError != nil {
		t.Fatalf("reopened without the snapshot: %d rebuilds, %v", st.Rebuilds, st.SnapshotError)
	}
	judge(ix, spellings, false)
	for p := 30; p < 35; p++ {
		judge(ix, page(p), true)
	}
	noLeak(t, dir, path, key, spellings)
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	files := noLeak(t, dir, path, key, spellings)
	if !files[filepath.Base(src.Snapshot)] {
		t.Fatalf("no snapshot beside the database: %v", slices.Sorted(maps.Keys(files)))
	}
	t.Logf("%s, %s mode: %d ids stored, files scanned: %v", e.name, mode, len(stored), slices.Sorted(maps.Keys(files)))

	// A wrong key, no key, no VFS: refused at OpenDB, nothing written.
	before := dirFiles(t, dir)
	for _, q := range e.wrong {
		db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: q})
		if db != nil {
			_ = db.Close(ctx)
		}
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "key is wrong or missing") {
			t.Fatalf("OpenDB with ConnParams %v: %v, want ErrBadConfig saying the key is wrong or missing", slices.Collect(maps.Keys(q)), err)
		}
		for _, s := range append([]string{key, strings.ToUpper(key)}, longValues(q)...) {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("the error shows a key: %v", err)
			}
		}
		sameFiles(t, dir, before)
	}
	// The app's pool opened without the key, the library's with it.
	bare := encryptedApp(t, path, mode, nil)
	if db, err := OpenDB(ctx, DBConfig{Path: path, DB: bare, ConnParams: params}); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "key is wrong or missing") {
		if db != nil {
			_ = db.Close(ctx)
		}
		t.Fatalf("OpenDB with the app's pool opened without the key: %v, want ErrBadConfig saying the key is wrong or missing", err)
	}
	_ = bare.Close()

	// The app changes its key (PRAGMA rekey, its pool closed as SQLCipher
	// asks) and opens the library with the new one: the snapshot and the
	// filter stay (the key of the positions is in the database, apart
	// from the encryption's); the old key is refused.
	if e.rekey == nil {
		return
	}
	app = encryptedApp(t, path, mode, params)
	mustExec(t, app, `PRAGMA rekey = "`+e.rekey.Get("_pragma_key")+`"`)
	_ = app.Close()
	app = encryptedApp(t, path, mode, e.rekey)
	db, err = OpenDB(ctx, DBConfig{Path: path, DB: app, ConnParams: e.rekey})
	if err != nil {
		t.Fatalf("OpenDB with the new key: %v", err)
	}
	ix, err = db.Index(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	waitServing(t, ix)
	if st := stats(ix); st.Rebuilds != 0 || st.SnapshotError != nil {
		t.Fatalf("after the rekey, reopened without the snapshot: %d rebuilds, %v", st.Rebuilds, st.SnapshotError)
	}
	judge(ix, spellings, false)
	for p := 35; p < 40; p++ {
		judge(ix, page(p), true)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	if db, err := OpenDB(ctx, DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: params}); !errors.Is(err, ErrBadConfig) {
		if db != nil {
			_ = db.Close(ctx)
		}
		t.Fatalf("OpenDB with the key of before the rekey: %v, want ErrBadConfig", err)
	}
	noLeak(t, dir, path, e.newKey, spellings)
}

// longValues is the values of q of at least 16 bytes (a key; not "4096"
// or a VFS's name, which a path may hold).
func longValues(q url.Values) []string {
	var out []string
	for _, vs := range q {
		for _, v := range vs {
			if len(v) >= 16 {
				out = append(out, v)
			}
		}
	}
	return out
}

// noLeak fails t if a file in dir other than the database and its
// journals holds the key (hex or raw) or a stored id, or if the database's
// files hold a stored id in clear.
// It returns the names of the files it read.
func noLeak(t testing.TB, dir, path, key string, ids []string) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	raw, err := hex.DecodeString(key)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{}
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		own[filepath.Base(path)+s] = true
	}
	for name, b := range dirFiles(t, dir) {
		read[name] = true
		if name == filepath.Base(path) && bytes.HasPrefix(b, []byte("SQLite format 3\x00")) {
			t.Errorf("%s is not encrypted", name)
		}
		if !own[name] {
			for _, k := range [][]byte{[]byte(key), bytes.ToUpper([]byte(key)), raw} {
				if bytes.Contains(b, k) {
					t.Errorf("%s holds the key", name)
				}
			}
		}
		for _, id := range ids {
			for _, s := range []string{id, norm.NFC.String(id)} {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("%s holds the stored id %q", name, s)
				}
			}
		}
	}
	return read
}

// TestRekeyUnderAnOpenDB: the app rekeys its SQLCipher database while the
// library has it open (SQLCipher asks for every other connection closed;
// an app may not). Each call then fails or answers exactly, never wrongly;
// the database stays whole, and opened with the new key the library
// answers exactly again.
func TestRekeyUnderAnOpenDB(t *testing.T) {
	if testdriver.Name() != "sqlcipher" {
		t.Skip("SQLCipher's PRAGMA rekey (make drivers)")
	}
	for _, withPool := range []bool{false, true} {
		t.Run(fmt.Sprintf("pool=%v", withPool), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "app.db")
			params := url.Values{"_pragma_key": {"x'" + testKey + "'"}}
			newParams := url.Values{"_pragma_key": {"x'" + strings.Repeat("c3", 32) + "'"}}
			app := encryptedApp(t, path, "wal", params)
			mustExec(t, app, `CREATE TABLE m (id TEXT PRIMARY KEY, body TEXT)`)
			stored := ids("rekeyed", 300)
			insertInto(t, app, "m", stored...)
			cfg := DBConfig{Path: path, Driver: testdriver.Driver(), ConnParams: params}
			if withPool {
				cfg = DBConfig{Path: path, DB: app, ConnParams: params}
			}
			src := Source{Table: "m", Column: "id", Snapshot: path + ".sfb"}
			db, err := OpenDB(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ix, err := db.Index(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			waitServing(t, ix)
			other := encryptedApp(t, path, "wal", params)
			other.SetMaxOpenConns(1)
			mustExec(t, other, `PRAGMA rekey = "`+newParams.Get("_pragma_key")+`"`)
			page := append(append([]string{}, stored[:20]...), ids("never", 20)...)
			failed := 0
			for range 5 {
				missing, err := ix.Missing(ctx, page)
				if err != nil {
					failed++
					continue
				}
				for i := range page {
					if want := i >= 20; missing[i] != want {
						t.Fatalf("after the rekey, Missing(%q) = %v, want %v", page[i], missing[i], want)
					}
				}
			}
			_ = db.Close(ctx)
			_ = app.Close()
			_ = other.Close()
			fresh := encryptedApp(t, path, "wal", newParams)
			var check string
			if err := fresh.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
				t.Fatalf("integrity_check after the rekey: %q, %v", check, err)
			}
			db, err = OpenDB(ctx, DBConfig{Path: path, DB: fresh, ConnParams: newParams})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close(ctx)
			if ix, err = db.Index(ctx, src); err != nil {
				t.Fatal(err)
			}
			missing, err := ix.Missing(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			for i := range page {
				if want := i >= 20; missing[i] != want {
					t.Fatalf("reopened with the new key, Missing(%q) = %v, want %v", page[i], missing[i], want)
				}
			}
			t.Logf("pool %v: %d of 5 calls failed after the rekey, the others exact", withPool, failed)
		})
	}
}
