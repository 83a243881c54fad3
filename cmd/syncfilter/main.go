// Command syncfilter builds, inspects and queries syncfilter snapshots,
// reports and removes what the library keeps in an app's database, and
// runs a one-command demo. Run `syncfilter help` for the subcommands.
//
// Exit status: 0 success; 1 runtime failure (missing file, I/O or SQLite
// error, interrupted); 2 usage error; 3 invalid snapshot, or one this
// build cannot use; 4 some keys invalid (query, check: the others were
// answered); 5 some keys missing (check --exit-code).
package main

import "os"

func main() {
	os.Exit(newApp(os.Stdin, os.Stdout, os.Stderr).main(os.Args[1:]))
}
