package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// graceAfterSignal is how long a command may take to end by itself once
// SIGINT or SIGTERM cancelled it. Most steps watch their context and end
// at once; SQLite waiting for a lock (up to --busy-timeout) does not.
const graceAfterSignal = 500 * time.Millisecond

// main runs the command in args until it ends, or until SIGINT or SIGTERM:
// the signal cancels the command's context, and a command that has not
// ended graceAfterSignal later, or at a second signal, is not waited for:
// the process ends with status 1 after one line saying so. That is safe
// at any moment: every file the commands write is replaced atomically
// (the previous file stays until the rename), and SQLite rolls back a
// transaction its process never committed.
func (a *app) main(args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan int, 1)
	go func() { done <- a.run(ctx, args) }()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel()
	select {
	case code := <-done:
		return code
	case <-time.After(graceAfterSignal):
	case <-sigs:
	}
	a.mu.Lock()
	cmd, abort := a.cmd, a.onAbort
	a.mu.Unlock()
	if abort != nil {
		abort()
	}
	if cmd == "" {
		cmd = "syncfilter"
	} else {
		cmd = "syncfilter " + cmd
	}
	a.log.printf("%s: interrupted (%v); ended without waiting for the step in progress (a wait for a SQLite lock does not end on a signal)", cmd, sig)
	return exitFailure
}
