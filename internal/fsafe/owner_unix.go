//go:build unix

package fsafe

import (
	"os"
	"syscall"
)

// Owner returns the user and group ids that own the file info describes.
func Owner(info os.FileInfo) (uid, gid int, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, -1, false
	}
	return int(st.Uid), int(st.Gid), true
}

// CopyOwner gives f the owner and group of the file from describes, as
// far as this process may: root sets both (as SQLite does for the -wal
// and -journal files it creates as root), another user only the group,
// and only to one of its groups. Where it may not, f keeps its creator's
// ownership: still a correct file, perhaps one fewer user can read.
func CopyOwner(f *os.File, from os.FileInfo) {
	uid, gid, ok := Owner(from)
	if !ok {
		return
	}
	cur, err := f.Stat()
	if err != nil {
		return
	}
	cu, cg, _ := Owner(cur)
	if cu == uid && cg == gid {
		return
	}
	if f.Chown(uid, gid) == nil {
		return
	}
	if cg != gid {
		_ = f.Chown(-1, gid)
	}
}
