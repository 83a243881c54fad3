module github.com/syncfilter/syncfilter

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/zeebo/blake3 v0.2.4
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
	golang.org/x/text v0.44.0
)

require (
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.74.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
