//go:build linux

package rebuild

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// createdDuring returns the names of the files created in dir while fn
// ran, however briefly they lived (inotify).
func createdDuring(t testing.TB, dir string, fn func()) []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	fn()
	var names []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			return names
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafePointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			names = append(names, string(bytes.TrimRight(name, "\x00")))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
