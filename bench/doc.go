// Package bench compares syncfilter with the libraries a user would pick
// instead, in the same run, on the same keys. It is a separate module so
// that the library's go.mod names only what the library uses.
//
//	go test -run '^$' -bench . -benchmem      (from this folder, or `make bench`)
//
// Results, with the machine and the command, are in ../docs/BENCHMARKS.md.
package bench
