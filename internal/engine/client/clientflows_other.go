//go:build !linux

package client

import (
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal/engine"
)

// startFlows: the TCP, UDP and ICMP flows are blocking sockets on locked
// OS threads (clientflows_linux.go).
func (w *workload) startFlows(netip.Addr, int) error {
	return fmt.Errorf("the %s client needs Linux: %w", w.cfg.Test, engine.ErrNotSupported)
}
