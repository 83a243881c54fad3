module github.com/syncfilter/syncfilter

go 1.26.0

require (
	github.com/mattn/go-sqlite3 v1.14.33
	github.com/ncruces/go-sqlite3 v0.34.1
	github.com/zeebo/blake3 v0.2.3
	golang.org/x/sys v0.44.0
	golang.org/x/term v0.1.0
	golang.org/x/text v0.42.0
	modernc.org/sqlite v1.44.0
)

require (
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/ncruces/go-sqlite3-wasm/v2 v2.2.35301 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/exp v0.0.0-20251023183803-a4bb9ffd2546 // indirect
	modernc.org/libc v1.67.4 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.11.0 // indirect
)
