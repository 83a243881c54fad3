// Command syncfilter builds, inspects and queries syncfilter snapshots,
// reports and removes what the library keeps in an app's database, and
// runs a one-command demo. Run `syncfilter help` for the subcommands.
//
// Exit status: 0 success; 1 runtime failure (missing file, I/O or SQLite
// error); 2 usage error; 3 invalid snapshot, or one this build cannot use;
// 4 some keys invalid (query, check: the others were answered); 5 some
// keys missing (check --exit-code).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := newApp(os.Stdin, os.Stdout, os.Stderr).run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
