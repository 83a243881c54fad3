//go:build !unix

package fsafe

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
