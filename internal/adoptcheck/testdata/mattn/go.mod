// An app on github.com/mattn/go-sqlite3 (cgo), before it adopts the
// library: run.sh copies this directory, points the library at the
// checkout (replace), and checks that `go mod tidy` moves neither this go
// line nor the driver's version.
module example.com/adopt/mattn

go 1.25.0

require github.com/mattn/go-sqlite3 v1.14.28
