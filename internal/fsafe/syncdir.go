package fsafe

import (
	"errors"
	"os"
	"runtime"
)

// SyncDir makes a rename in dir durable. Windows cannot sync a directory;
// there the rename is as durable as NTFS makes it.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) { // some file systems refuse; the rename itself happened
		return nil
	}
	return err
}
