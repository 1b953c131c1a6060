//go:build !linux

package engine

import (
	"fmt"
	"time"
)

// readProcCPU: the process's CPU is read with Linux's getrusage (max RSS in
// KiB), so elsewhere it is not measured.
func readProcCPU() (procCPU, error) {
	return procCPU{}, fmt.Errorf("process CPU accounting needs Linux: %w", ErrNotSupported)
}

// readSelfAndChildrenCPU: see readProcCPU.
func readSelfAndChildrenCPU() (time.Duration, error) {
	return 0, fmt.Errorf("process CPU accounting needs Linux: %w", ErrNotSupported)
}
