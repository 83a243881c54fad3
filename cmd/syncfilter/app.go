package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/snapshot"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1 // runtime failure: missing file, SQLite error
	exitUsage    = 2 // bad flag or argument
	exitSnapshot = 3 // the snapshot is invalid
)

// usageError marks an error as the caller's: a bad flag or argument.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// app holds the process's streams; every subcommand writes through it.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	terminal       bool // stderr is a terminal: draw progress bars
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			a.terminal = true
		}
	}
	return a
}

type command struct {
	name, args, summary string
	run                 func(a *app, ctx context.Context, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"rebuild", "--db PATH --table NAME --column NAME --out FILE [--fpr P] [--capacity N] [--headroom H] [--force] [--allow-unindexed] [--json]",
			"scan the table and atomically replace the snapshot FILE (the cron job)", (*app).rebuild},
		{"inspect", "FILE [--json]", "print a snapshot's header and health", (*app).inspect},
		{"verify", "FILE", "exit 0 if the snapshot is valid and usable by this build, else print why and exit 3", (*app).verify},
		{"query", "FILE [-0] [KEY...]", "print maybe or absent for each key (arguments, or stdin lines)", (*app).query},
		{"check", "--db PATH --table NAME --column NAME [--snapshot FILE] [-0] [KEY...]",
			"print fetched or missing for each key: the definitive answer (read-only)", (*app).check},
		{"detach", "--db PATH --table NAME --column NAME [--snapshot FILE]",
			"remove the filter's tables, triggers and record from the database (and its snapshot FILE)", (*app).detach},
		{"demo", "[--dir DIR]", "seed a SQLite database, build a filter and sync pages of ids", (*app).demo},
		{"help", "[COMMAND]", "show this help, or a command's", (*app).help},
	}
}

func (a *app) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.usage()
		return exitUsage
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	for _, c := range commands {
		if c.name == name {
			return a.exit(c.name, c.run(a, ctx, args[1:]))
		}
	}
	fmt.Fprintf(a.stderr, "syncfilter: unknown command %q (run syncfilter help)\n", name)
	return exitUsage
}

// exit prints err in one line and maps it to an exit code.
func (a *app) exit(cmd string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue *usageError
	code := exitFailure
	switch {
	case errors.As(err, &ue), errors.Is(err, rebuild.ErrBadName), errors.Is(err, rebuild.ErrBadConfig):
		code = exitUsage
	case isInvalidSnapshot(err):
		code = exitSnapshot
	case errors.Is(err, context.Canceled):
		err = errors.New("interrupted")
	}
	fmt.Fprintf(a.stderr, "syncfilter %s: %s\n", cmd, oneLine(err.Error()))
	if code == exitUsage {
		fmt.Fprintf(a.stderr, "run syncfilter help %s\n", cmd)
	}
	return code
}

func isInvalidSnapshot(err error) bool {
	for _, s := range []error{snapshot.ErrNotSnapshot, snapshot.ErrUnsupportedVersion, snapshot.ErrTruncated,
		snapshot.ErrCorruptHeader, snapshot.ErrChecksum, snapshot.ErrTrailingData, snapshot.ErrIncompatible} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (a *app) usage() {
	fmt.Fprintln(a.stderr, "usage: syncfilter COMMAND [ARGS]")
	fmt.Fprintln(a.stderr)
	for _, c := range commands {
		fmt.Fprintf(a.stderr, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(a.stderr)
	fmt.Fprintln(a.stderr, "Run syncfilter help COMMAND, or syncfilter COMMAND -h, for its flags.")
	fmt.Fprintln(a.stderr, "Exit codes: 0 success, 1 runtime failure, 2 usage error, 3 invalid snapshot.")
}

func (a *app) help(_ context.Context, args []string) error {
	if len(args) == 0 {
		a.usage()
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] && c.name != "help" {
			return c.run(a, context.Background(), []string{"-h"})
		}
	}
	if args[0] == "help" {
		a.usage()
		return nil
	}
	return usagef("unknown command %q", args[0])
}

// flags returns a flag set for cmd whose -h prints the command's usage.
func (a *app) flags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		for _, c := range commands {
			if c.name == cmd {
				fmt.Fprintf(a.stderr, "usage: syncfilter %s %s\n\n%s.\n", c.name, c.args, strings.ToUpper(c.summary[:1])+c.summary[1:])
			}
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(a.stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}
