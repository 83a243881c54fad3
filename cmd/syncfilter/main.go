// Command syncfilter builds, inspects and queries syncfilter snapshots, and
// runs a one-command demo. Run `syncfilter help` for the subcommands.
//
// Exit codes: 0 success, 1 runtime failure (missing file, SQLite error),
// 2 usage error (bad flag or argument), 3 invalid snapshot.
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
