module github.com/syncfilter/syncfilter/bench

go 1.26.8

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/syncfilter/syncfilter v0.0.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/zeebo/blake3 v0.2.4 // indirect
)

replace github.com/syncfilter/syncfilter => ../
