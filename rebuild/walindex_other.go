//go:build !unix

package rebuild

// mapWalIndex: no mapping on this platform; every check is exact.
func mapWalIndex(string) *walIndex { return nil }
