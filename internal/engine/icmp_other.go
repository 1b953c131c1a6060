//go:build !linux

package engine

import (
	"fmt"
	"net/netip"
)

// checkICMPSocket: icmp_echo sends from unprivileged ICMP datagram sockets
// (icmp_linux.go).
func checkICMPSocket(netip.Addr) error {
	return fmt.Errorf("icmp_echo needs Linux (ICMP datagram sockets): %w", ErrNotSupported)
}
