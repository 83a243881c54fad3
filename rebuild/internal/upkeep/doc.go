// Package upkeep is the background of a database: the worker that runs
// the collections' jobs one at a time (loads first, then rebuilds,
// catch-ups and saves in the order asked), the follower that catches the
// served filters up between calls, the scan that builds a filter from the
// table and its log, and the snapshots it loads and saves.
//
// A Keeper is one collection's side of it: it asks for jobs, publishes
// what they built through package gate, and reports Progress. Nothing
// here is on a call's path: a call that finds no filter it can trust asks
// a Keeper for a rebuild (gate.Config.Repair) and answers from SQLite.
//
// Locks: DB.mu guards the queue, the follower's set and every Keeper's
// k.mu fields; it is taken after the store's and the gate's turns and
// before work.Life.mu. Goroutines: the worker and the follower (counted
// by the database's work.Life, which Close and Suspend wait for), a
// scan's builder (its scan waits for it) and the progress reporter, which
// nothing waits for: a callback may call Close, so Close does not wait
// for a callback in progress.
package upkeep
