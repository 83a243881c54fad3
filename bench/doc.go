// Package bench compares syncfilter with the libraries a user would pick
// instead, in the same run, on the same keys. It is a separate module so
// that the library's go.mod names only what the library uses.
//
//	go test -run '^$' -bench . -benchmem      (from this folder, or `make bench`)
//
// BenchmarkSyncLoop, BenchmarkSyncFetched and BenchmarkOpenFirstAnswer
// measure the library as a sync engine uses it, against what the engine
// writes without it (package syncbench; `make syncbench` runs them with
// the initial-sync and cold-start harnesses of cmd/syncbench).
//
// Results, with the machine and the command, are in ../docs/BENCHMARKS.md.
package bench
