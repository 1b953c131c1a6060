//go:build !linux

package hoststat

import (
	"fmt"
	"time"
)

// ReadProcCPU: the process's CPU is read with Linux's getrusage (max RSS in
// KiB), so elsewhere it is not measured.
func ReadProcCPU() (ProcCPU, error) {
	return ProcCPU{}, fmt.Errorf("process CPU accounting needs Linux: %w", ErrNotSupported)
}

// ReadSelfAndChildrenCPU: see ReadProcCPU.
func ReadSelfAndChildrenCPU() (time.Duration, error) {
	return 0, fmt.Errorf("process CPU accounting needs Linux: %w", ErrNotSupported)
}
