//go:build !linux

package syncbench

import "errors"

var errNoDrop = errors.New("dropping a file from the page cache is implemented for Linux only")

// DropCache is implemented for Linux only.
func DropCache(path string) error { return errNoDrop }

// Resident is implemented for Linux only.
func Resident(path string) (in, pages int, err error) { return 0, 0, errNoDrop }
