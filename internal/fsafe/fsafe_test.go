package fsafe

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckWriteProtectsTheDatabaseUnderAnySpelling: the database and its
// files are refused through a symbolic link to the database (whose -wal
// SQLite names after the resolved path), "..", a hard link, and a link to
// the live -wal; a plain file beside them is not.
func TestCheckWriteProtectsTheDatabaseUnderAnySpelling(t *testing.T) {
	real := t.TempDir()
	db := filepath.Join(real, "app.db")
	write(t, db, "SQLite format 3\x00")
	write(t, db+"-wal", "live wal")
	elsewhere := t.TempDir()
	link := filepath.Join(elsewhere, "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	toWal := filepath.Join(elsewhere, "records.sfb")
	if err := os.Symlink(db+"-wal", toWal); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(elsewhere, "hard")
	if err := os.Link(db, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	protected := DatabaseFiles(link) // the app names its database by the link
	for _, target := range []string{
		db, link, hard, toWal,
		filepath.Join(real, "sub", "..", "app.db"),
		db + "-wal", db + "-shm", db + "-journal", // -shm and -journal do not exist yet
		link + "-wal",
	} {
		if _, err := CheckWrite(target, protected...); !errors.Is(err, ErrProtected) {
			t.Errorf("CheckWrite(%s) = %v, want ErrProtected", target, err)
		}
	}
	tg, err := CheckWrite(filepath.Join(real, "records.sfb"), protected...)
	if err != nil || tg.File != filepath.Join(real, "records.sfb") || tg.Info != nil || tg.Link {
		t.Fatalf("a new file beside the database: %+v, %v", tg, err)
	}
	if got, _ := os.ReadFile(db + "-wal"); string(got) != "live wal" {
		t.Fatal("the -wal changed")
	}
}

func TestCheckWriteFollowsLinksAndRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(data, "records.sfb")
	write(t, file, "x")
	link := filepath.Join(dir, "records.sfb")
	if err := os.Symlink("data/records.sfb", link); err != nil { // relative, as ln -s makes them
		t.Fatal(err)
	}
	tg, err := CheckWrite(link)
	if err != nil || tg.File != file || tg.Dir != data || !tg.Link || tg.Info == nil {
		t.Fatalf("CheckWrite(link) = %+v, %v", tg, err)
	}
	dangling := filepath.Join(dir, "new.sfb")
	if err := os.Symlink(filepath.Join(data, "new.sfb"), dangling); err != nil {
		t.Fatal(err)
	}
	if tg, err := CheckWrite(dangling); err != nil || tg.File != filepath.Join(data, "new.sfb") || tg.Info != nil {
		t.Fatalf("CheckWrite(dangling link) = %+v, %v", tg, err)
	}
	// ".." after a link leaves the link's target, as the kernel does.
	elsewhere := t.TempDir()
	if err := os.Mkdir(filepath.Join(elsewhere, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(elsewhere, "app.db"), "the database")
	if err := os.Symlink(filepath.Join(elsewhere, "sub"), filepath.Join(dir, "sublink")); err != nil {
		t.Fatal(err)
	}
	dotdot := filepath.Join(dir, "sublink") + "/../app.db"
	if got, err := Resolve(dotdot); err != nil || got != filepath.Join(elsewhere, "app.db") {
		t.Fatalf("Resolve(%s) = %s, %v", dotdot, got, err)
	}
	if _, err := CheckWrite(dotdot, filepath.Join(elsewhere, "app.db")); !errors.Is(err, ErrProtected) {
		t.Fatalf("CheckWrite(%s) = %v, want ErrProtected", dotdot, err)
	}
	if b, _ := os.ReadFile(dotdot); string(b) != "the database" {
		t.Fatalf("the kernel reads %q through %s", b, dotdot)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckWrite(loop); err == nil {
		t.Fatal("a link to itself resolved")
	}
	if _, err := CheckWrite(data); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("CheckWrite(dir) = %v", err)
	}
	if runtime.GOOS != "windows" {
		fifo := filepath.Join(dir, "fifo")
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
		if _, err := CheckWrite(fifo); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("CheckWrite(fifo) = %v", err)
		}
	}
}

// TestOpenRegularNeverBlocks: a FIFO without a writer is refused at once
// (a plain open would wait for a writer forever).
func TestOpenRegularNeverBlocks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, _, err := OpenRegular(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("OpenRegular(fifo) = %v, want ErrNotRegular", err)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing: the bug blocks forever
		t.Fatal("OpenRegular blocked on a FIFO")
	}
	file := filepath.Join(dir, "file")
	write(t, file, "content")
	f, info, err := OpenRegular(file)
	if err != nil || info.Size() != 7 {
		t.Fatalf("OpenRegular(file) = %v, %v", info, err)
	}
	f.Close()
	if _, _, err := OpenRegular(dir); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("OpenRegular(dir) = %v", err)
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		"records.sfb.tmp-0123456789abcdef":  true,
		"records.sfb.tmp-4294967295":        true,
		"records.sfb.tmp-7":                 true,
		"records.sfb.tmp-notes":             false,
		"records.sfb.tmp-0123456789ABCDEF":  false,
		"records.sfb.tmp-0123456789abcdef0": false,
		"records.sfb.tmp-42949672950":       false,
		"records.sfb.tmp-":                  false,
		"records.sfb.tmp-12.bak":            false,
		"other.sfb.tmp-0123456789abcdef":    false,
		"xrecords.sfb.tmp-0123456789abcdef": false,
	} {
		if got := IsTemp(name, "records.sfb"); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
	f, err := CreateTemp(t.TempDir(), "records.sfb", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !IsTemp(filepath.Base(f.Name()), "records.sfb") {
		t.Fatalf("CreateTemp named its file %s", f.Name())
	}
}

// TestSweepTempRemovesOnlyProvableLeftovers: only stale files named
// exactly like temporary files and holding the magic (or nothing) go;
// an app's files go nowhere, whatever they are called.
func TestSweepTempRemovesOnlyProvableLeftovers(t *testing.T) {
	dir := t.TempDir()
	magic := "\x89SFB\r\n\x1a\n"
	name := func(s string) string { return filepath.Join(dir, s) }
	gone := map[string]string{
		"records.sfb.tmp-0123456789abcdef": magic + "half a snapshot",
		"records.sfb.tmp-00000000000000ff": "",
		"records.sfb.tmp-123":              magic,
	}
	kept := map[string]string{
		"records.sfb.tmp-notes":            magic + "an app's file",
		"records.sfb.tmp-fedcba9876543210": "an app's file with a temp-like name",
		"records.sfb.tmp-1":                "SQLite format 3\x00",
		"other.sfb.tmp-0123456789abcdef":   magic,
		"records.sfb":                      magic,
	}
	old := time.Now().Add(-time.Hour)
	for n, c := range gone {
		write(t, name(n), c)
		_ = os.Chtimes(name(n), old, old)
	}
	for n, c := range kept {
		write(t, name(n), c)
		_ = os.Chtimes(name(n), old, old)
	}
	fresh := "records.sfb.tmp-aaaaaaaaaaaaaaaa" // a live writer's
	write(t, name(fresh), magic)
	kept[fresh] = magic
	linked := "records.sfb.tmp-bbbbbbbbbbbbbbbb" // a link, to a file holding the magic
	if err := os.Symlink(name("records.sfb"), name(linked)); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := mkfifo(name("records.sfb.tmp-cccccccccccccccc")); err != nil {
			t.Fatal(err)
		}
	}
	removed := SweepTemp(dir, "records.sfb", time.Now().Add(-time.Minute), []byte(magic))
	if len(removed) != len(gone) {
		t.Fatalf("removed %v, want the %d leftovers", removed, len(gone))
	}
	for n := range gone {
		if _, err := os.Lstat(name(n)); !os.IsNotExist(err) {
			t.Errorf("%s survived", n)
		}
	}
	for n, c := range kept {
		if got, err := os.ReadFile(name(n)); err != nil || !bytes.Equal(got, []byte(c)) {
			t.Errorf("%s changed or removed: %v", n, err)
		}
	}
	for _, n := range []string{linked, "records.sfb.tmp-cccccccccccccccc"} {
		if _, err := os.Lstat(name(n)); err != nil && runtime.GOOS != "windows" {
			t.Errorf("%s removed", n)
		}
	}
}
