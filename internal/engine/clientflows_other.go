//go:build !linux

package engine

import (
	"fmt"
	"net/netip"
)

// startFlows: the TCP, UDP and ICMP flows are blocking sockets on locked
// OS threads (clientflows_linux.go).
func (w *workload) startFlows(netip.Addr, int) error {
	return fmt.Errorf("the %s client needs Linux: %w", w.cfg.Test, ErrNotSupported)
}
