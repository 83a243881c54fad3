//go:build !unix

package fsafe

import "os"

// Other systems have no FIFOs that a path can name.
func openNonblock(path string) (*os.File, error) { return os.Open(path) }
