module github.com/syncfilter/syncfilter/internal/ncruces

go 1.25.0

require github.com/ncruces/go-sqlite3 v0.34.1

require (
	github.com/ncruces/go-sqlite3-wasm/v2 v2.2.35301 // indirect
	github.com/ncruces/julianday v1.0.0 // indirect
	golang.org/x/crypto v0.51.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
	lukechampine.com/adiantum v1.1.1 // indirect
)
