//go:build !unix

package fsafe

import "os"

// Owner reports no owner where files have no numeric owner.
func Owner(os.FileInfo) (uid, gid int, ok bool) { return -1, -1, false }

// CopyOwner does nothing where files have no numeric owner.
func CopyOwner(*os.File, os.FileInfo) {}
