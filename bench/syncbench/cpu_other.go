//go:build !unix

package syncbench

import (
	"errors"
	"time"
)

// processCPU is not measured here.
func processCPU() (time.Duration, error) {
	return 0, errors.New("process CPU time: not measured on this system")
}
