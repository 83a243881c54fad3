// Package testexec starts the child processes of this module's tests (a
// test binary running itself again, or a command a test built) so that
// they also run when the tests run on another CPU under a user-mode
// emulator, as `make cross` runs them:
//
//	SYNCFILTER_TEST_EXEC=qemu-s390x GOARCH=s390x go test -exec qemu-s390x ./snapshot
//
// There the test binary is an s390x program that this machine's kernel
// cannot start: a child started directly fails with "exec format error".
// Command starts it through the same emulator. The test binary cannot
// see go test's -exec flag, and qemu-user hides itself (/proc/self/exe
// and os.Executable name the emulated program, uname reports the
// emulated CPU), hence the variable, which `make cross` sets.
package testexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Env names the variable holding the emulator command the tests run
// under: a program and its arguments, separated by spaces. Unset or empty
// on a native run.
const Env = "SYNCFILTER_TEST_EXEC"

// Emulator returns the emulator command from Env, or nil.
func Emulator() []string { return strings.Fields(os.Getenv(Env)) }

// Command is exec.Command(name, args...), run through the emulator when
// the tests run under one. name must be a program built for the CPU the
// tests run on (os.Args[0], or a binary a test built), not one of this
// machine's commands.
func Command(name string, args ...string) *exec.Cmd {
	emu := Emulator()
	if len(emu) == 0 {
		return exec.Command(name, args...)
	}
	return exec.Command(emu[0], append(append(emu[1:len(emu):len(emu)], name), args...)...)
}

// Wrap returns a program that runs binary through the emulator, for
// tests that run it from a shell or another program: binary itself on a
// native run, or else a shell script of the same base name in a new
// directory "emulated" beside binary.
func Wrap(binary string) (string, error) {
	emu := Emulator()
	if len(emu) == 0 {
		return binary, nil
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return "", fmt.Errorf("wrap binary: %w", err)
	}
	dir := filepath.Join(filepath.Dir(abs), "emulated")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("wrap binary: %w", err)
	}
	var script strings.Builder
	script.WriteString("#!/bin/sh\nexec")
	for _, word := range append(emu, abs) {
		script.WriteString(" '" + strings.ReplaceAll(word, "'", `'\''`) + "'")
	}
	script.WriteString(" \"$@\"\n")
	wrapper := filepath.Join(dir, filepath.Base(abs))
	if err := os.WriteFile(wrapper, []byte(script.String()), 0o755); err != nil {
		return "", fmt.Errorf("wrap binary: %w", err)
	}
	return wrapper, nil
}
