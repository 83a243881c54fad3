// Package gate is the call path: it answers one collection's keys from
// its filter and SQLite, and owns the collection's state (bypass,
// serving, rebuilding, closed) and the views it serves from.
//
// A call reads the state lock-free (Gate.state, an atomic pointer), runs
// one probe statement through package store that checks the view is
// current (schema cookie, log head and tag) and confirms the filter's
// maybes in the same statement, and takes in the log entries the view
// lacks (catchup.go) when that is cheaper than confirming them. Anything
// it cannot vouch for is answered from SQLite alone: a wrong "absent" is
// never returned.
//
// Locks: Gate.mu (every state transition, held only to swap the pointer)
// and the spTurn token (one build of a view of stored spellings at a
// time). File.refs
// counts the calls using the database file, which closes after the last.
// It starts no goroutine and imports store, syncfilter and normalize.
package gate
