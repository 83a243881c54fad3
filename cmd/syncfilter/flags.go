package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// parse sets the flags of fs found anywhere in args (before or after the
// positional arguments, as in `inspect FILE --json`) and returns the
// positional arguments. "--" ends the flags: every later argument is
// positional, even one starting with "-". "-h" prints the usage.
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
			return nil, usagef("unknown flag %s", arg)
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() && !hasValue {
			value = "true"
		} else if !hasValue {
			if i+1 >= len(args) {
				return nil, usagef("flag %s needs a value", arg)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, usagef("invalid value %q for flag -%s: %v", value, name, unwrapAll(err))
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

// required reports the first of the named string flags left empty.
func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			return usagef("flag --%s is required", n)
		}
	}
	return nil
}

// exactly checks the count of positional arguments.
func exactly(pos []string, n int, what string) error {
	if len(pos) != n {
		return usagef("want %s, got %d argument(s)", what, len(pos))
	}
	return nil
}

// fraction is a float flag constrained to (0, 1).
type fraction struct{ v *float64 }

func (f fraction) String() string {
	if f.v == nil {
		return ""
	}
	return fmt.Sprint(*f.v)
}

func (f fraction) Set(s string) error {
	var x float64
	if _, err := fmt.Sscan(s, &x); err != nil || !(x > 0 && x < 1) {
		return fmt.Errorf("want a number between 0 and 1")
	}
	*f.v = x
	return nil
}
