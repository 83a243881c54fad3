package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/syncfilter/syncfilter/syncfilter"
)

// parse sets the flags of fs found anywhere in args (before or after the
// positional arguments, as in `inspect FILE --json`) and returns the
// positional arguments. Flags are written --name or --name=value (one
// dash works too); "--" ends the flags: every later argument is
// positional, even one starting with "-". -h and --help print the
// command's help on stdout.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			pos = append(pos, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if name == "h" || name == "help" {
			fs.Usage()
			return nil, flag.ErrHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			msg := fmt.Sprintf("unknown flag %s", arg)
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			if s := nearest(name, names); s != "" {
				msg += fmt.Sprintf("; did you mean --%s?", s)
			}
			return nil, usagef("%s", msg)
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() && !hasValue {
			value = "true"
		} else if !hasValue {
			if i+1 >= len(args) {
				return nil, usagef("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, usagef("invalid value %q for flag --%s: %v", value, name, unwrapAll(err))
		}
	}
	return pos, nil
}

func unwrapAll(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// sourceFlags declares --db, --table and --column: the source of truth.
func sourceFlags(fs *flag.FlagSet) (db, table, column *string) {
	db = fs.String("db", "", "SQLite database `path`")
	table = fs.String("table", "", "source table `name`")
	column = fs.String("column", "", "key column `name`")
	return db, table, column
}

// compareFlag declares --compare: how the server compares ids, as the
// database records it for the source (a source not attached yet is
// attached so).
func compareFlag(fs *flag.FlagSet) *syncfilter.Compare {
	c := new(syncfilter.Compare)
	fs.Var(compareValue{c}, "compare", "how the server compares ids: `canonical` (equal after NFC, the default) or bytes (byte for byte)")
	return c
}

type compareValue struct{ c *syncfilter.Compare }

func (v compareValue) String() string {
	if v.c == nil {
		return ""
	}
	return v.c.String()
}

func (v compareValue) Set(s string) error {
	switch s {
	case "canonical":
		*v.c = syncfilter.CompareCanonical
	case "bytes":
		*v.c = syncfilter.CompareBytes
	default:
		return fmt.Errorf("%q: canonical or bytes", s)
	}
	return nil
}

// required reports every named string flag left empty, at once.
func required(fs *flag.FlagSet, names ...string) error {
	var missing []string
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			missing = append(missing, "--"+n)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usagef("flag %s is required", missing[0])
	}
	return usagef("flags %s are required", strings.Join(missing, ", "))
}

// allOrOne checks the flags of a command that works on every source of
// the database (--all: --db, and none of notWithAll) or on one (the flags
// of one). does says what --all does and hint what to give instead of
// the missing flags, for the messages.
func allOrOne(fs *flag.FlagSet, all bool, notWithAll, one []string, does, hint string) error {
	if all {
		if set := given(fs, notWithAll...); len(set) > 0 {
			return usagef("--all %s: it does not go with %s", does, strings.Join(set, ", "))
		}
		return required(fs, "db")
	}
	if err := required(fs, one...); err != nil {
		return usagef("%v (or --db and --all, %s)", err, hint)
	}
	return nil
}

// given returns the named flags set on the command line, as --name.
func given(fs *flag.FlagSet, names ...string) []string {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			set = append(set, "--"+f.Name)
		}
	})
	return set
}

// exactly checks the count of positional arguments.
func exactly(pos []string, n int, what string) error {
	if len(pos) != n {
		return usagef("want %s, got %d argument(s)", what, len(pos))
	}
	return nil
}

// Flag values that parse the whole argument strictly: "0.5x" or "1e3junk"
// are refused, not read as their prefix.

// fraction is a number in (0, 1).
type fraction struct{ v *float64 }

func (f fraction) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f fraction) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !(x > 0 && x < 1) {
		return fmt.Errorf("want a number between 0 and 1, exclusive")
	}
	*f.v = x
	return nil
}

// bounded is a finite number in [lo, hi].
type bounded struct {
	v      *float64
	lo, hi float64
}

func (b bounded) String() string {
	if b.v == nil {
		return ""
	}
	return strconv.FormatFloat(*b.v, 'g', -1, 64)
}

func (b bounded) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || x < b.lo || x > b.hi {
		return fmt.Errorf("want a number from %g to %g", b.lo, b.hi)
	}
	*b.v = x
	return nil
}

// count is a whole number in [0, hi].
type count struct {
	v  *uint64
	hi uint64
}

func (c count) String() string {
	if c.v == nil {
		return ""
	}
	return strconv.FormatUint(*c.v, 10)
}

func (c count) Set(s string) error {
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil || x > c.hi {
		return fmt.Errorf("want a whole number from 0 to %d", c.hi)
	}
	*c.v = x
	return nil
}

// duration is a Go duration ("5s", "250ms") in [0, 1h].
type duration struct{ v *time.Duration }

func (d duration) String() string {
	if d.v == nil {
		return ""
	}
	return d.v.String()
}

func (d duration) Set(s string) error {
	x, err := time.ParseDuration(s)
	if err != nil || x < 0 || x > time.Hour {
		return fmt.Errorf("want a duration such as 5s or 250ms, at most 1h")
	}
	*d.v = x
	return nil
}

// fileMode is an octal permission such as 0644.
type fileMode struct{ v *uint32 }

func (m fileMode) String() string {
	if m.v == nil || *m.v == 0 { // 0: not given, a default applies
		return ""
	}
	return fmt.Sprintf("%04o", *m.v)
}

func (m fileMode) Set(s string) error {
	x, err := strconv.ParseUint(s, 8, 32)
	if err != nil || x > 0o777 || x&0o600 != 0o600 {
		return fmt.Errorf("want an octal permission from 0600 to 0777 that the owner can read and write")
	}
	*m.v = uint32(x)
	return nil
}
