//go:build unix

package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// These tests run the binary as two users: root (the cron job, the
// machine's administrator) and unprivileged users made for them (the
// app, an operator). They need root to make users and give files away;
// run as anyone else they skip, saying so.

const (
	appUser = "sftest-app" // owns the app's database
	opsUser = "sftest-ops" // an operator; with member, also in appUser's group
)

type account struct {
	name     string
	uid, gid uint32
	groups   []uint32
}

// testAccount returns the local user name, created (useradd, a system
// user without home or shell) if missing, in the extra groups given.
func testAccount(t *testing.T, name string, groups ...string) account {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("runs the command as other users: needs root to create them, this test runs as uid %d", os.Geteuid())
	}
	if _, err := user.Lookup(name); err != nil {
		args := []string{"--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin"}
		if len(groups) > 0 {
			args = append(args, "--groups", strings.Join(groups, ","))
		}
		if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
			t.Skipf("cannot create the test user %s: %v: %s", name, err, out)
		}
	} else {
		for _, g := range groups {
			if out, err := exec.Command("usermod", "--append", "--groups", g, name).CombinedOutput(); err != nil {
				t.Skipf("cannot add %s to %s: %v: %s", name, g, err, out)
			}
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	a := account{name: name, uid: uint32(uid), gid: uint32(gid)}
	ids, _ := u.GroupIds()
	for _, g := range ids {
		n, _ := strconv.Atoi(g)
		a.groups = append(a.groups, uint32(n))
	}
	return a
}

// runAs runs the binary as the account.
func runAs(t *testing.T, a account, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}}
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = "/"
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// sharedDir returns a new directory every user may enter (t.TempDir's
// parents are private to root), owned by owner with mode perm.
func sharedDir(t *testing.T, owner account, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "syncfilter-users-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "data")
	if err := os.Mkdir(sub, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sub, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Chown(sub, int(owner.uid), int(owner.gid)); err != nil {
		t.Fatal(err)
	}
	return sub
}

// usersDB creates dir/app.db in rollback-journal mode, with
// records(id TEXT PRIMARY KEY) holding rec-0..rec-99, owned by owner with
// mode perm.
func usersDB(t *testing.T, dir string, owner account, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE records (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := db.Exec(`INSERT INTO records VALUES (?)`, fmt.Sprint("rec-", i)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, int(owner.uid), int(owner.gid)); err != nil {
		t.Fatal(err)
	}
	return path
}

func ownerOf(t *testing.T, path string) (uid, gid uint32, perm os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, info.Mode().Perm()
}

// TestRootRebuildLeavesASnapshotTheAppReads: the README's cron line run
// as root writes a snapshot owned by the database's owner and group, as
// readable as the database; the app's user reads it (check uses it, no
// "snapshot not used"); the next root run keeps that, atomically;
// --owner and --group give it elsewhere.
func TestRootRebuildLeavesASnapshotTheAppReads(t *testing.T) {
	t.Parallel()
	app := testAccount(t, appUser)
	ops := testAccount(t, opsUser)
	dir := sharedDir(t, app, 0o750)
	db := usersDB(t, dir, app, 0o640)
	snap := filepath.Join(dir, "records.sfb")
	args := []string{"rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap}
	checkArgs := []string{"check", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap, "rec-1", "nope"}
	for round := range 2 {
		r := run(t, "", args...).must(t, 0)
		if uid, gid, perm := ownerOf(t, snap); uid != app.uid || gid != app.gid || perm != 0o640 {
			t.Fatalf("round %d: snapshot %d:%d %04o, want the database's %d:%d 0640", round, uid, gid, perm, app.uid, app.gid)
		}
		if !strings.Contains(r.stdout, "mode 0640 "+appUser+":"+appUser) {
			t.Fatalf("the summary does not say who owns the snapshot: %q", r.stdout)
		}
		c := runAs(t, app, "", checkArgs...).must(t, 0)
		if c.stdout != "fetched\trec-1\nmissing\tnope\n" || c.stderr != "" {
			t.Fatalf("round %d: check as %s: %q %q", round, appUser, c.stdout, c.stderr)
		}
		// The database's other files stay the app's (SQLite gives them
		// to the database's owner when it runs as root).
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(db + suffix); err == nil {
				if uid, _, _ := ownerOf(t, db+suffix); uid != app.uid {
					t.Fatalf("%s owned by %d", db+suffix, uid)
				}
			}
		}
	}
	run(t, "", append(args, "--owner", opsUser, "--group", appUser)...).must(t, 0)
	if uid, gid, _ := ownerOf(t, snap); uid != ops.uid || gid != app.gid {
		t.Fatalf("--owner %s --group %s: %d:%d", opsUser, appUser, uid, gid)
	}
	r := run(t, "", append(args, "--owner", "no-such-user-here")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--owner") {
		t.Fatalf("--owner of no user: exit %d, %q", r.code, r.stderr)
	}
}

// TestGroupMemberRebuildLeavesASnapshotTheAppReads: an operator who is
// not root but is in the database's group runs the job: the snapshot
// goes to the database's group, and the app reads it.
func TestGroupMemberRebuildLeavesASnapshotTheAppReads(t *testing.T) {
	t.Parallel()
	app := testAccount(t, appUser)
	ops := testAccount(t, opsUser, appUser)
	dir := sharedDir(t, app, 0o770)
	db := usersDB(t, dir, app, 0o660)
	snap := filepath.Join(dir, "records.sfb")
	for round := range 2 {
		r := runAs(t, ops, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
		if uid, gid, perm := ownerOf(t, snap); uid != ops.uid || gid != app.gid || perm != 0o640 {
			t.Fatalf("round %d: snapshot %d:%d %04o, want %d:%d 0640", round, uid, gid, perm, ops.uid, app.gid)
		}
		if !strings.Contains(r.stderr, "only root may give a file to another user") {
			t.Fatalf("no note that the snapshot stays the operator's: %q", r.stderr)
		}
		c := runAs(t, app, "", "check", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap, "rec-1", "nope").must(t, 0)
		if c.stdout != "fetched\trec-1\nmissing\tnope\n" || c.stderr != "" {
			t.Fatalf("round %d: check as %s: %q %q", round, appUser, c.stdout, c.stderr)
		}
	}
	r := runAs(t, ops, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap, "--owner", appUser)
	if r.code != exitUsage || !strings.Contains(r.stderr, "only root") {
		t.Fatalf("--owner as a user: exit %d, %q", r.code, r.stderr)
	}
}

// TestReadOnlyUser: a user who may read the database but not write its
// directory. In rollback-journal mode, check and status work; in WAL
// mode they work while the app holds the database open, and otherwise
// fail saying exactly why and what to do.
func TestReadOnlyUser(t *testing.T) {
	t.Parallel()
	root := account{name: "root"}
	reader := testAccount(t, opsUser)
	dir := sharedDir(t, root, 0o755)
	db := usersDB(t, dir, root, 0o644)
	snap := filepath.Join(dir, "records.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	// The app's choice, which the library never changes: WAL. With no
	// process holding the database, its -shm is gone.
	wal := sqlDB(t, db)
	if _, err := wal.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		t.Fatal(err)
	}
	wal.Close()
	if _, err := os.Stat(db + "-shm"); !os.IsNotExist(err) {
		t.Fatalf("%s-shm after the last connection closed: %v", db, err)
	}
	check := []string{"check", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap, "rec-1", "nope"}
	status := []string{"status", "--db", db, "--table", "records", "--column", "id", "--snapshot", snap}

	for _, args := range [][]string{check, status} {
		r := runAs(t, reader, "", args...)
		for _, want := range []string{"as user " + opsUser, "WAL mode", db + "-shm", "may not create files in " + dir, "journal_mode = DELETE"} {
			if r.code != exitFailure || !strings.Contains(r.stderr, want) {
				t.Fatalf("%s as a reader, WAL, no -shm: exit %d, %q lacks %q", args[0], r.code, r.stderr, want)
			}
		}
	}

	// The app holds the database open: the -shm exists and may be read.
	app, err := sql.Open("sqlite3", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := app.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	r := runAs(t, reader, "", check...).must(t, 0)
	if r.stdout != "fetched\trec-1\nmissing\tnope\n" || r.stderr != "" {
		t.Fatalf("check as a reader while the app is open: %q %q", r.stdout, r.stderr)
	}
	if _, err := app.Exec(`PRAGMA journal_mode = DELETE`); err != nil {
		t.Fatal(err)
	}
	app.Close()

	r = runAs(t, reader, "", check...).must(t, 0)
	if r.stdout != "fetched\trec-1\nmissing\tnope\n" || r.stderr != "" {
		t.Fatalf("check as a reader, rollback journal: %q %q", r.stdout, r.stderr)
	}
	r = runAs(t, reader, "", status...).must(t, 0)
	if !strings.Contains(r.stdout, "attached        yes") || !strings.Contains(r.stdout, ": usable") {
		t.Fatalf("status as a reader, rollback journal: %q %q", r.stdout, r.stderr)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("the reader left files: %v", entries)
	}
}

// TestUnwritableMetricsDirectory: a metrics file in a directory the job's
// user may not write fails the run before the scan: the database is not
// attached and no snapshot is written.
func TestUnwritableMetricsDirectory(t *testing.T) {
	t.Parallel()
	ops := testAccount(t, opsUser)
	dir := sharedDir(t, ops, 0o755)
	db := usersDB(t, dir, ops, 0o644)
	metricsDir := sharedDir(t, account{name: "root"}, 0o755)
	before := state(t, db)
	r := runAs(t, ops, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "r.sfb"),
		"--metrics-file", filepath.Join(metricsDir, "syncfilter.prom"))
	if r.code != exitFailure || !strings.Contains(r.stderr, "cannot create files in "+metricsDir) {
		t.Fatalf("exit %d, %q", r.code, r.stderr)
	}
	if state(t, db) != before {
		t.Fatal("the database was attached before the refusal")
	}
	if _, err := os.Stat(filepath.Join(dir, "r.sfb")); !os.IsNotExist(err) {
		t.Fatal("the snapshot was written before the refusal")
	}
}

// TestRootRebuildAllWritesOnlyWhereTheOwnerCould: --all takes snapshot
// paths from the database, which the app's user may write; run as root,
// it writes a recorded path only in a directory the database's owner
// owns, so that the database cannot make root create files elsewhere.
func TestRootRebuildAllWritesOnlyWhereTheOwnerCould(t *testing.T) {
	t.Parallel()
	app := testAccount(t, appUser)
	dir := sharedDir(t, app, 0o750)
	db := usersDB(t, dir, app, 0o640)
	snap := filepath.Join(dir, "records.sfb")
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", snap).must(t, 0)
	elsewhere := filepath.Join(sharedDir(t, account{name: "root"}, 0o755), "records.sfb")
	record := func(p string) {
		t.Helper()
		if _, err := sqlDB(t, db).Exec(`UPDATE syncfilter_sources SET snapshot = ?`, p); err != nil {
			t.Fatal(err)
		}
	}
	record(elsewhere) // what the app's user could write into the database
	r := run(t, "", "rebuild", "--db", db, "--all")
	if r.code != exitFailure || !strings.Contains(r.stderr, "is owned by root, not by "+appUser) {
		t.Fatalf("a recorded path in root's directory: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(elsewhere); !os.IsNotExist(err) {
		t.Fatal("root wrote where the database said, in a directory its owner does not own")
	}
	record(snap)
	run(t, "", "rebuild", "--db", db, "--all").must(t, 0)
	if uid, gid, _ := ownerOf(t, snap); uid != app.uid || gid != app.gid {
		t.Fatalf("snapshot %d:%d, want the database's owner", uid, gid)
	}
}
