//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSignalsEndEveryCommand: SIGTERM or SIGINT ends a command that is
// waiting on a lock (with --busy-timeout 1h), reading a stdin that stays
// open, at once: the real binary, a real signal. (A scan watches its
// context every 4,096 rows: package rebuild's cancellation tests.) The bound
// asserted is far below what the command would otherwise take (an hour,
// or forever); the time taken is logged (the design: half a second).
func TestSignalsEndEveryCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	big := appDB(t, 1000)
	bigSnap := filepath.Join(filepath.Dir(big), "big.sfb")
	run(t, "", "rebuild", "--db", big, "--table", "records", "--column", "id", "--out", bigSnap).must(t, 0)
	locked := plainApp(t)
	snap := filepath.Join(filepath.Dir(locked), "r.sfb")
	prom := filepath.Join(filepath.Dir(locked), "m.prom")
	run(t, "", "rebuild", "--db", locked, "--table", "records", "--column", "id", "--out", snap, "--metrics-file", prom).must(t, 0)
	promAll := filepath.Join(filepath.Dir(locked), "all.prom")
	run(t, "", "rebuild", "--db", locked, "--all", "--metrics-file", promAll).must(t, 0)
	if _, err := sqlDB(t, locked).Exec(`PRAGMA journal_mode = DELETE`); err != nil { // the app's choice: readers wait for a writer
		t.Fatal(err)
	}
	src := []string{"--db", locked, "--table", "records", "--column", "id"}
	keep := untouched(t, snap)
	release := exclusiveLock(t, locked)
	defer release()
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"rebuild waiting on a lock", syscall.SIGTERM, append([]string{"rebuild", "--out", snap, "--busy-timeout", "1h", "--metrics-file", prom}, src...)},
		{"rebuild --all waiting on a lock", syscall.SIGTERM, []string{"rebuild", "--db", locked, "--all", "--busy-timeout", "1h", "--metrics-file", promAll}},
		{"check waiting on a lock", syscall.SIGINT, append([]string{"check", "--busy-timeout", "1h", "rec-1"}, src...)},
		{"status waiting on a lock", syscall.SIGTERM, append([]string{"status", "--busy-timeout", "1h"}, src...)},
		{"detach waiting on a lock", syscall.SIGTERM, append([]string{"detach", "--busy-timeout", "1h"}, src...)},
		{"query waiting on a lock", syscall.SIGTERM, []string{"query", "--db", locked, "--busy-timeout", "1h", snap, "rec-1"}},
		{"query reading an open stdin", syscall.SIGTERM, []string{"query", "--db", big, bigSnap}},
		{"check reading an open stdin", syscall.SIGINT, []string{"check", "--db", big, "--table", "records", "--column", "id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, tc.args...)
			stdin, err := cmd.StdinPipe() // stays open: no key ever arrives
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }() // a failure below leaves no child behind
			// Into its wait (its signal handler comes first, in main): a
			// command reading stdin has answered a first key; one waiting
			// on a lock has opened its database, and waits a moment more.
			if strings.HasSuffix(tc.name, "stdin") {
				if _, err := io.WriteString(stdin, "rec-1\n"); err != nil {
					t.Fatal(err)
				}
				if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
					t.Fatalf("no answer to a first key: %v", err)
				}
			} else {
				waitOpened(t, cmd.Process.Pid, locked)
				time.Sleep(100 * time.Millisecond)
			}
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			sent := time.Now()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- cmd.Wait() }()
			select {
			case <-ended:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running 30s after %v", tc.sig)
			}
			t.Logf("ended %v after %v", time.Since(sent).Round(time.Millisecond), tc.sig)
			if code := cmd.ProcessState.ExitCode(); code != exitFailure || !strings.Contains(stderr.String(), "interrupted") {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			for _, line := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
				if !stamped.MatchString(line) {
					t.Fatalf("unstamped stderr line %q", line)
				}
			}
		})
	}
	keep()
	if m := readMetrics(t, prom); reason(m) != reasonInterrupted {
		t.Fatalf("metrics after the interrupted rebuild: reason %q", reason(m))
	}
	if m := seriesOf(t, promAll); m["syncfilter_rebuild_last_failure_reason"]["records.id"].labels["reason"] != reasonInterrupted ||
		m["syncfilter_rebuild_last_success_timestamp_seconds"]["records.id"].value == 0 {
		t.Fatalf("metrics after the interrupted rebuild --all: %+v", m)
	}
}

// TestBusyTimeoutOnEveryCommand: every command that opens the database
// takes --busy-timeout. Held past it, the lock fails the command with the
// step that waited and the hint; given longer, the command waits past
// SQLite's default 5 seconds and succeeds once the app lets go.
func TestBusyTimeoutOnEveryCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits 12 seconds")
	}
	db := plainApp(t)
	dir := filepath.Dir(db)
	run(t, "", "rebuild", "--db", db, "--table", "records", "--column", "id", "--out", filepath.Join(dir, "r.sfb")).must(t, 0)
	if _, err := sqlDB(t, db).Exec(`PRAGMA journal_mode = DELETE`); err != nil {
		t.Fatal(err)
	}
	src := []string{"--db", db, "--table", "records", "--column", "id"}
	commands := map[string][]string{
		"rebuild": append([]string{"rebuild", "--out", filepath.Join(dir, "fresh.sfb")}, src...),
		"check":   append([]string{"check", "rec-1"}, src...),
		"status":  append([]string{"status"}, src...),
		"detach":  append([]string{"detach"}, src...),
	}
	release := exclusiveLock(t, db)
	for name, args := range commands {
		r := run(t, "", append(args, "--busy-timeout", "100ms")...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "database is locked") || !strings.Contains(r.stderr, "waited 100ms, the --busy-timeout") {
			t.Fatalf("%s with the lock held: exit %d, %q", name, r.code, r.stderr)
		}
	}
	release()
	// Given longer, each waits past SQLite's default 5 s and succeeds once
	// the app lets go. Detach goes alone: a status or check reading the
	// source while it is detached fails (the library's concern, not this
	// test's).
	for _, batch := range [][]string{{"rebuild", "check", "status"}, {"detach"}} {
		release := exclusiveLock(t, db)
		var wg sync.WaitGroup
		var mu sync.Mutex
		results := map[string]result{}
		for _, name := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := runQuiet(append(commands[name], "--busy-timeout", "1m")...)
				mu.Lock()
				results[name] = r
				mu.Unlock()
			}()
		}
		time.Sleep(6 * time.Second) // past SQLite's default 5 s
		release()
		wg.Wait()
		for name, r := range results {
			if r.code != 0 {
				t.Errorf("%s --busy-timeout 1m, the lock released after 6s: exit %d, %q", name, r.code, r.stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh.sfb")); err != nil {
		t.Fatal(err)
	}
}

// waitOpened waits until process pid has one of files open, as
// /proc/PID/fd shows (up to 30 s); where there is no /proc, it waits
// 300 ms.
func waitOpened(t *testing.T, pid int, files ...string) {
	t.Helper()
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		time.Sleep(300 * time.Millisecond)
		return
	}
	want := map[string]bool{}
	for _, f := range files {
		if real, err := filepath.EvalSymlinks(f); err == nil {
			want[real] = true
		}
		want[f] = true
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		entries, err := os.ReadDir(fds)
		if err != nil {
			t.Fatalf("the command's open files: %v", err)
		}
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && want[target] {
				return
			}
		}
	}
	t.Fatalf("the command did not open any of %v within 30 s", files)
}
