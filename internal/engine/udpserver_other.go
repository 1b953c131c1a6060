//go:build !linux

package engine

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"
)

// newUDPServer: the UDP data plane steers datagrams to per-flow sockets
// with a classic BPF program on a SO_REUSEPORT group (udpserver_linux.go).
func newUDPServer(_ netip.Addr, _ sessionInfo, s *Setup, _ time.Duration, _ *slog.Logger) (dataPlane, error) {
	return nil, fmt.Errorf("the %s server needs Linux: %w", s.Test, ErrNotSupported)
}

// drainUDPStream: there is no UDP data plane to drain here.
func drainUDPStream(dataPlane, time.Duration) *UDPRecv { return nil }
