package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/syncfilter/syncfilter/internal/sqlitecode"
	"github.com/syncfilter/syncfilter/rebuild"
	"github.com/syncfilter/syncfilter/snapshot"
)

// Exit codes, documented in the README and in `syncfilter help`.
const (
	exitOK       = 0
	exitFailure  = 1 // runtime failure: missing file, I/O or SQLite error
	exitUsage    = 2 // bad command, flag or argument
	exitSnapshot = 3 // the snapshot is invalid, or intact but unusable by this build
	exitInvalid  = 4 // query, check: some keys were invalid (each answered "invalid"); the others were answered
	exitMissing  = 5 // check --exit-code: some keys are missing (and none was invalid)
)

// usageError marks an error as the caller's: a bad flag or argument.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends a command with a given status after it printed its
// output (some keys invalid or missing): not a failure to report.
type exitError struct {
	code int
	msg  string // printed on stderr unless empty
}

func (e *exitError) Error() string { return e.msg }

// app holds the process's streams; every subcommand writes through it:
// stdout for its output, the logger for every stderr line.
type app struct {
	stdin    io.Reader
	stdout   io.Writer
	log      *logger // stderr
	terminal bool    // stderr is a terminal: draw progress bars, no time stamps
	width    int     // its width in columns (terminal only)

	// What the running command says about itself, for the hints of its
	// last line and for an interrupted run; set before it opens anything.
	mu      sync.Mutex
	cmd     string        // the command's name
	db      string        // its --db
	busy    time.Duration // its --busy-timeout
	onAbort func()        // run before the process ends without waiting for the command

	params url.Values // the connection parameters from the environment (connparams.go)
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	a := &app{stdin: stdin, stdout: stdout}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		a.terminal = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			a.width = w
		}
	}
	a.log = newLogger(stderr, a.terminal)
	return a
}

// opens records the database a command opens and how long it lets SQLite
// wait for a lock, for the hint of a "database is locked" failure.
func (a *app) opens(db string, busy time.Duration) {
	a.mu.Lock()
	a.db, a.busy = db, busy
	a.mu.Unlock()
}

// setAbort sets what must happen if the process ends without waiting for
// the command (see main); nil clears it.
func (a *app) setAbort(f func()) {
	a.mu.Lock()
	a.onAbort = f
	a.mu.Unlock()
}

type command struct {
	name, args, summary string
	examples            []string
	run                 func(a *app, ctx context.Context, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"rebuild", "--db PATH (--table NAME --column NAME --out FILE | --all [--out-dir DIR]) [flags]",
			"scan a source's table and atomically replace its snapshot (the cron job; --all: every source)",
			[]string{
				"syncfilter rebuild --db app.db --table records --column id --out records.sfb",
				"syncfilter rebuild --db app.db --table records --column id --out records.sfb --json --metrics-file /var/lib/node_exporter/syncfilter.prom",
				"syncfilter rebuild --db app.db --all --metrics-file /var/lib/node_exporter/syncfilter.prom",
				"syncfilter rebuild --db /var/lib/app/app.db --all --owner app --group app --busy-timeout 1m",
			}, (*app).rebuild},
		{"status", "--db PATH (--table NAME --column NAME [--compare MODE] [--snapshot FILE] | --all) [--json] [--busy-timeout D]",
			"show what the library keeps in the database and whether snapshots are usable (read-only)",
			[]string{"syncfilter status --db app.db --table records --column id --snapshot records.sfb", "syncfilter status --db app.db --all --json"}, (*app).status},
		{"inspect", "FILE [--json]", "print a snapshot's header and health (streams the file)",
			[]string{"syncfilter inspect records.sfb", "syncfilter inspect records.sfb --json"}, (*app).inspect},
		{"verify", "FILE", "exit 0 if the snapshot is valid and usable by this build, else print why and exit 3",
			[]string{"syncfilter verify records.sfb && echo ok"}, (*app).verify},
		{"query", "FILE [--db PATH] [-0] [--json] [KEY...]", "print maybe or absent for each key (arguments, or stdin as it arrives)",
			[]string{"syncfilter query records.sfb --db app.db id-1 id-2", "cut -f1 ids.tsv | syncfilter query records.sfb --db app.db --json"}, (*app).query},
		{"check", "--db PATH --table NAME --column NAME [--compare MODE] [--version-column NAME] [--snapshot FILE] [-0] [--json] [--exit-code] [--busy-timeout D] [KEY...]",
			"print fetched or missing for each key (with --version-column, have or need for each id<TAB>version line): the definitive answer (read-only)",
			[]string{
				"syncfilter check --db app.db --table records --column id id-1 id-2",
				"syncfilter check --db app.db --table records --column id --snapshot records.sfb --exit-code < ids.txt",
				"syncfilter check --db app.db --table records --column id --version-column ver --json < ids-and-versions.tsv",
			}, (*app).check},
		{"detach", "--db PATH (--table NAME --column NAME [--snapshot FILE] | --all) [--force] [--busy-timeout D]",
			"remove the filter's tables, triggers and records from the database (and a snapshot FILE)",
			[]string{"syncfilter detach --db app.db --table records --column id --snapshot records.sfb", "syncfilter detach --db app.db --all"}, (*app).detach},
		{"demo", "[--dir DIR] [--records N]", "seed a SQLite database, build a filter and sync pages of ids",
			[]string{"syncfilter demo", "syncfilter demo --dir /tmp/sf --records 50000"}, (*app).demo},
		{"version", "", "print the versions of this build: module, formats, normalization, SQLite",
			[]string{"syncfilter version", "syncfilter --version"}, (*app).version},
		{"help", "[COMMAND]", "show this help, or a command's", []string{"syncfilter help rebuild"}, (*app).help},
	}
}

func (a *app) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.log.printf("syncfilter: no command given (%s)", strings.Join(commandNames(), ", "))
		a.log.printf("run syncfilter help")
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version", "-V":
		name = "version"
	}
	for _, c := range commands {
		if c.name == name {
			a.mu.Lock()
			a.cmd = c.name
			a.mu.Unlock()
			if opensDB[c.name] {
				if err := a.loadConnParams(); err != nil {
					return a.exit(c.name, err)
				}
			}
			return a.exit(c.name, c.run(a, ctx, args[1:]))
		}
	}
	msg := fmt.Sprintf("syncfilter: unknown command %q", name)
	if s := nearest(name, commandNames()); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	a.log.printf("%s", msg)
	a.log.printf("run syncfilter help")
	return exitUsage
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// exit prints err in one line on stderr and maps it to an exit status.
// A failure that waited for a lock says which step waited, how long, and
// what to do.
func (a *app) exit(cmd string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue *usageError
	var ee *exitError
	code := exitFailure
	switch {
	case errors.As(err, &ee):
		if ee.msg != "" {
			a.log.printf("syncfilter %s: %s", cmd, ee.msg)
		}
		return ee.code
	case errors.As(err, &ue), errors.Is(err, rebuild.ErrBadConfig), errors.Is(err, rebuild.ErrBadConfig):
		code = exitUsage
	case isInvalidSnapshot(err):
		code = exitSnapshot
	case errors.Is(err, context.Canceled):
		err = errors.New("interrupted")
	}
	// The library names its own step ("rebuild: ..."): say it once.
	msg := strings.TrimPrefix(oneLine(err.Error()), cmd+": ")
	msg += a.lockHint(cmd, err, msg) + a.keyHint(msg)
	a.log.printf("syncfilter %s: %s", cmd, msg)
	if code == exitUsage {
		a.log.printf("run syncfilter help %s", cmd)
	}
	return code
}

// lockHint explains a failure of SQLite to get a lock (SQLITE_BUSY: another
// connection held it for longer than --busy-timeout): the step that
// waited (the message's words before SQLite's, or the command's name),
// for how long, and what to do. msg is the message printed.
func (a *app) lockHint(cmd string, err error, msg string) string {
	code, se := sqlitecode.Find(err)
	ok := se != nil
	if !ok || (code&0xff != sqlitecode.Busy && code&0xff != sqlitecode.Locked) {
		return ""
	}
	a.mu.Lock()
	db, busy := a.db, a.busy
	a.mu.Unlock()
	step := strings.TrimSuffix(strings.TrimSuffix(msg, se.Error()), ": ")
	if i := strings.LastIndex(step, ": "); i >= 0 {
		step = step[i+2:]
	}
	if step == "" || step == msg {
		step = cmd
	}
	return fmt.Sprintf(" (step %q waited %s, the --busy-timeout, for a lock that another connection held on %s, most likely an open write transaction of the app: "+
		"run again when it is done, or give a longer --busy-timeout, e.g. --busy-timeout %s)", step, shortDuration(busy), db, shortDuration(max(time.Minute, 4*busy)))
}

// shortDuration prints d as typed: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// isInvalidSnapshot reports whether err is a verdict on a snapshot's
// bytes (read whole and wrong, or intact and unusable here), as opposed
// to a failure to read it.
func isInvalidSnapshot(err error) bool {
	for _, s := range []error{snapshot.ErrNotSnapshot, snapshot.ErrUnsupportedVersion, snapshot.ErrTruncated,
		snapshot.ErrCorruptHeader, snapshot.ErrWrongKey, snapshot.ErrChecksum, snapshot.ErrTrailingData, snapshot.ErrIncompatible} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// usage prints the list of commands.
func (a *app) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: syncfilter COMMAND [ARGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A persisted Bloom filter in front of a SQLite table of fetched record ids.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run syncfilter help COMMAND, or syncfilter COMMAND --help, for its flags and examples.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "An encrypted database: its key, as the connection parameters the app opens it with")
	fmt.Fprintln(w, "(_pragma_key=x'…' for SQLCipher, vfs=adiantum&hexkey=… for ncruces), in the environment")
	fmt.Fprintln(w, "variable "+connParamsEnv+", or in a file named by "+connParamsFileEnv+";")
	fmt.Fprintln(w, "never in a flag. The binary must link that driver (README: encrypted databases).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit status: 0 success; 1 runtime failure (missing file, I/O or SQLite error);")
	fmt.Fprintln(w, "2 usage error; 3 invalid snapshot, or one this build cannot use; 4 some keys invalid")
	fmt.Fprintln(w, "(query, check: the others were answered); 5 some keys missing (check --exit-code).")
}

func (a *app) help(_ context.Context, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		a.usage(a.stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(a, context.Background(), []string{"--help"})
		}
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := nearest(args[0], commandNames()); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return usagef("%s", msg)
}

// flags returns a flag set for cmd whose --help prints the command's
// usage, flags and examples on stdout.
func (a *app) flags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors itself
	fs.Usage = func() { a.commandHelp(fs, cmd) }
	return fs
}

func (a *app) commandHelp(fs *flag.FlagSet, cmd string) {
	w := a.stdout
	for _, c := range commands {
		if c.name != cmd {
			continue
		}
		fmt.Fprintf(w, "usage: syncfilter %s %s\n\n%s.\n", c.name, c.args, strings.ToUpper(c.summary[:1])+c.summary[1:])
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(w, "\nFlags:")
			printFlags(w, fs)
		}
		if len(c.examples) > 0 {
			fmt.Fprintln(w, "\nExamples:")
			for _, e := range c.examples {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
}

// printFlags lists the flags as they are typed: --name (one dash for the
// one-letter -0).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
}

// nearest returns the candidate closest to s by edit distance, if close
// enough to be a plausible typo.
func nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (adjacent swaps count
// one), so that "rebiuld" is one step from "rebuild".
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
