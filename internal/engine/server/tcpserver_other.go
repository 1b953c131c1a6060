//go:build !linux

package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

// newTCPServer: the TCP data plane is blocking sockets on locked OS threads
// (tcpserver_linux.go).
func newTCPServer(_ sessionInfo, s *engine.Setup, _ time.Duration, _ *slog.Logger) (dataPlane, error) {
	return nil, fmt.Errorf("the %s server needs Linux: %w", s.Test, engine.ErrNotSupported)
}
