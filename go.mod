module github.com/syncfilter/syncfilter

go 1.24

require (
	github.com/mattn/go-sqlite3 v1.14.22
	github.com/zeebo/blake3 v0.2.3
	golang.org/x/sys v0.22.0
	golang.org/x/term v0.1.0
	golang.org/x/text v0.11.0
	modernc.org/sqlite v1.34.5
)

require (
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/ncruces/go-strftime v0.1.9 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	modernc.org/libc v1.55.3 // indirect
	modernc.org/mathutil v1.6.0 // indirect
	modernc.org/memory v1.8.0 // indirect
)
