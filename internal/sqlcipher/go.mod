module github.com/syncfilter/syncfilter/internal/sqlcipher

go 1.25.0

require github.com/mutecomm/go-sqlcipher/v4 v4.4.2
