//go:build !linux

package client

import (
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal/engine"
)

// checkICMPSocket: icmp_echo sends from unprivileged ICMP datagram sockets
// (icmp_linux.go).
func checkICMPSocket(netip.Addr) error {
	return fmt.Errorf("icmp_echo needs Linux (ICMP datagram sockets): %w", engine.ErrNotSupported)
}
