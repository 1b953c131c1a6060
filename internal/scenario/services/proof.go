package services

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ctStats summarises the nodes' conntrack tables.
type ctStats struct {
	vip, nat int
	backends map[netip.Addr]bool
}

// checkCell is the proof of one cell: iptables must have translated in
// netfilter (VIP entries, all NATed); the eBPF paths must have translated
// in BPF with netfilter never seeing a VIP nor doing any NAT; connection
// tests to the pod-to-service VIP must reach backends on both nodes where
// the nodes track connections.
func checkCell(impl string, c scenario.Cell, st ctStats, translations uint64) error {
	var errs []error
	switch impl {
	case ImplIPTables:
		if st.vip == 0 {
			errs = append(errs, errors.New("no conntrack entry to a VIP: kube-proxy's DNAT was not taken"))
		}
		if st.nat < st.vip {
			errs = append(errs, fmt.Errorf("%d of %d VIP entries not translated", st.vip-st.nat, st.vip))
		}
	case ImplNone:
		if st.vip != 0 || st.nat != 0 {
			errs = append(errs, fmt.Errorf("netfilter saw %d VIP and %d NATed connections without a service", st.vip, st.nat))
		}
	default:
		if translations == 0 {
			errs = append(errs, fmt.Errorf("%s translated nothing", impl))
		}
		if st.vip != 0 || st.nat != 0 {
			errs = append(errs, fmt.Errorf("netfilter saw %d VIP and %d NATed connections: the eBPF path was bypassed", st.vip, st.nat))
		}
	}
	if c.Path == PathPodToService && c.Test != engine.TCPRR && len(st.backends) == 1 {
		errs = append(errs, errors.New("only one backend reached"))
	}
	return errors.Join(errs...)
}
