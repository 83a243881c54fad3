// Package work holds the one coordination primitive of package rebuild:
// Life, the work in progress on an index or a database, which Close and
// Suspend wait for. It owns one mutex, Life.mu, taken after every other
// lock of the library but the leaves (docs/ARCHITECTURE.md, row 8) and
// held only to count.
package work
