//go:build !linux

package engine

import (
	"fmt"
	"log/slog"
	"time"
)

// newTCPServer: the TCP data plane is blocking sockets on locked OS threads
// (tcpserver_linux.go).
func newTCPServer(_ sessionInfo, s *Setup, _ time.Duration, _ *slog.Logger) (dataPlane, error) {
	return nil, fmt.Errorf("the %s server needs Linux: %w", s.Test, ErrNotSupported)
}
