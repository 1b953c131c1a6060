//go:build !linux

package capture

import (
	"fmt"
	"runtime"
)

// Capture is a running capture; captures need Linux (AF_PACKET).
type Capture struct{}

// Start is not supported outside Linux.
func Start(do func(func() error) error, iface string, markers [][]byte, o Options) (*Capture, error) {
	return nil, fmt.Errorf("capture on %s: AF_PACKET on %s: %w", iface, runtime.GOOS, ErrNotSupported)
}

// Stop is not supported outside Linux.
func (c *Capture) Stop() (Result, error) {
	return Result{}, fmt.Errorf("capture on %s: %w", runtime.GOOS, ErrNotSupported)
}
