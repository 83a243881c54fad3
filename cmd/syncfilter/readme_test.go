package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeInstallStepsRun runs the README's build and install steps as
// written, in a copy of the repository's files (what a fresh clone holds:
// the tracked files and the new ones not ignored), and the binary they
// build.
func TestReadmeInstallStepsRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command from a copy of the repository")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "steps run as written")
	if !ok {
		t.Fatal("README lost its install steps")
	}
	_, block, _ := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v): nothing to copy as a clone", err)
	}
	clone := t.TempDir()
	n := 0
	for _, name := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(clone, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if _, err := os.Stat(filepath.Join(clone, "go.mod")); err != nil || n < 50 {
		t.Fatalf("the copy holds %d files, no go.mod (%v)", n, err)
	}
	steps := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = clone
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README install step %q: %v\n%s", line, err, out)
		}
		if strings.Contains(line, "version") && !strings.Contains(string(out), "syncfilter ") {
			t.Fatalf("%q printed %q", line, out)
		}
		steps++
	}
	if steps < 3 {
		t.Fatalf("only %d install steps found", steps)
	}
	info, err := os.Stat(filepath.Join(clone, "bin", "syncfilter"))
	if err != nil || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("bin/syncfilter: %v, %v", info, err)
	}
	out, err := exec.Command(filepath.Join(clone, "bin", "syncfilter"), "help").Output()
	if err != nil || !strings.Contains(string(out), "rebuild") {
		t.Fatalf("the built binary: %v, %q", err, out)
	}
}
