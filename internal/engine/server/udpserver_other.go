//go:build !linux

package server

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

// newUDPServer: the UDP data plane steers datagrams to per-flow sockets
// with a classic BPF program on a SO_REUSEPORT group (udpserver_linux.go).
func newUDPServer(_ netip.Addr, _ sessionInfo, s *engine.Setup, _ time.Duration, _ *slog.Logger) (dataPlane, error) {
	return nil, fmt.Errorf("the %s server needs Linux: %w", s.Test, engine.ErrNotSupported)
}

// drainUDPStream: there is no UDP data plane to drain here.
func drainUDPStream(dataPlane, time.Duration) *engine.UDPRecv { return nil }
