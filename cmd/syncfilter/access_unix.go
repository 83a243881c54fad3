//go:build unix

package main

import "golang.org/x/sys/unix"

// canWrite reports whether this process may create files in dir.
func canWrite(dir string) bool { return unix.Access(dir, unix.W_OK|unix.X_OK) == nil }

// canRead reports whether this process may read path.
func canRead(path string) bool { return unix.Access(path, unix.R_OK) == nil }
