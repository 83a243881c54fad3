package ncruces

import (
	"database/sql"
	"net/url"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/syncfilter/syncfilter/internal/clitest"
)

// testKey is a 256-bit adiantum key.
const testKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0"

// TestCommandOnAdiantum: the command built for ncruces (make
// cli-ncruces, CGO_ENABLED=0) on a database its adiantum VFS encrypts,
// the key in the environment (clitest.Run says what is checked).
func TestCommandOnAdiantum(t *testing.T) {
	clitest.Run(t, clitest.Setup{
		DriverFile: "cmd/syncfilter/driver_ncruces.go",
		BuildLine:  "//go:build !cgo || syncfilter_nomattn",
		Work:       "internal/ncruces/go.work",
		BuildEnv:   []string{"CGO_ENABLED=0"},
		Tags:       "syncfilter_nomattn",
		Params:     url.Values{"vfs": {"adiantum"}, "hexkey": {testKey}},
		Key:        testKey,
		Wrong:      url.Values{"vfs": {"adiantum"}, "hexkey": {strings.Repeat("ab", 32)}},
		Open: func(path string, params url.Values) (*sql.DB, error) {
			return driver.Open("file:" + path + "?_pragma=journal_mode(wal)&" + params.Encode())
		},
	})
}
