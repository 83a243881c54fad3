//go:build !unix

package rebuild

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
