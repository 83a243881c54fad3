//go:build !linux

package rebuild

import "testing"

// createdDuring needs inotify: the test is skipped elsewhere.
func createdDuring(t testing.TB, dir string, fn func()) []string {
	t.Skip("watching a folder needs inotify (Linux)")
	return nil
}
