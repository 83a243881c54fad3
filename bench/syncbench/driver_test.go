package syncbench

import "testing"

// TestDriverDSN: mattn and modernc read the harness's options as they
// are; for ncruces they are spelled as _pragma, busy_timeout first.
func TestDriverDSN(t *testing.T) {
	for _, c := range []struct {
		d          Driver
		opts, want string
	}{
		{Mattn, AppDSNOptions, "file:/a%3Fb/app.db?" + AppDSNOptions},
		{Modernc, "_journal_mode=WAL", "file:/a%3Fb/app.db?_journal_mode=WAL"},
		{Ncruces, AppDSNOptions, "file:/a%3Fb/app.db?_pragma=busy_timeout%2810000%29&_pragma=journal_mode%28WAL%29&_pragma=synchronous%28NORMAL%29&_txlock=immediate"},
		{Ncruces, "_journal_mode=OFF&_sync=OFF&_cache_size=-262144", "file:/a%3Fb/app.db?_pragma=journal_mode%28OFF%29&_pragma=synchronous%28OFF%29&_pragma=cache_size%28-262144%29"},
		{Ncruces, "", "file:/a%3Fb/app.db?"},
	} {
		if got := c.d.DSN("/a?b/app.db", c.opts); got != c.want {
			t.Errorf("%s, %q:\n got %s\nwant %s", c.d.Name, c.opts, got, c.want)
		}
	}
}
