// An app on modernc.org/sqlite, before it adopts the library: run.sh
// copies this directory, points the library at the checkout (replace),
// and checks that `go mod tidy` moves neither this go line nor the
// driver's version.
module example.com/adopt/modernc

go 1.25.0

require modernc.org/sqlite v1.34.5
