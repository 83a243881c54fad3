// Command fixturegen writes, or checks, the committed snapshot fixtures of
// every format version.
//
//	go run ./cmd/fixturegen -out fixtures          write fixtures/v<N>/ (refuses to change released files)
//	go run ./cmd/fixturegen -out fixtures -check   regenerate in memory and compare byte for byte
//
// The fixtures are built from fixed keys, hash keys, dataset id and time,
// so the output is the same on every machine. Released fixtures are never
// rewritten: a format change adds a version folder, and the folders of
// older versions are still regenerated and compared.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("fixturegen", flag.ContinueOnError)
	fl.SetOutput(stderr)
	out := fl.String("out", "fixtures", "fixtures `directory` (the version folder is created inside)")
	check := fl.Bool("check", false, "compare with the files on disk instead of writing")
	force := fl.Bool("force", false, "overwrite files that differ (only for a version that was never released)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "fixturegen: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	var err error
	if *check {
		err = checkDir(*out, stdout)
	} else {
		err = writeDir(*out, *force, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fixturegen: %v\n", err)
		return 1
	}
	return 0
}
