package sqlcipher

import (
	"database/sql"
	"net/url"
	"strings"
	"testing"

	_ "github.com/mutecomm/go-sqlcipher/v4"

	"github.com/syncfilter/syncfilter/internal/clitest"
)

// testKey is a raw 256-bit SQLCipher key.
const testKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0"

// TestCommandOnSQLCipher: the command built for SQLCipher (make
// cli-sqlcipher) on a SQLCipher database, the key in the environment
// (clitest.Run says what is checked).
func TestCommandOnSQLCipher(t *testing.T) {
	clitest.Run(t, clitest.Setup{
		DriverFile: "cmd/syncfilter/driver_sqlcipher.go",
		BuildLine:  "//go:build cgo && syncfilter_nomattn",
		Work:       "internal/sqlcipher/go.work",
		BuildEnv:   []string{"CGO_ENABLED=1"},
		Tags:       "syncfilter_nomattn",
		Params:     url.Values{"_pragma_key": {"x'" + testKey + "'"}},
		Key:        testKey,
		Wrong:      url.Values{"_pragma_key": {"x'" + strings.Repeat("ab", 32) + "'"}},
		Open: func(path string, params url.Values) (*sql.DB, error) {
			return sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&"+params.Encode())
		},
	})
}
