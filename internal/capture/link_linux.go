package capture

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// linkCounters are an interface's packet counters.
type linkCounters struct{ rx, tx uint64 }

// ethernetLink returns the index and MTU of iface in the calling thread's
// network namespace, which must be an Ethernet (or loopback) device: the
// parser reads frames from their Ethernet header.
func ethernetLink(iface string) (index, mtu int, err error) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return 0, 0, fmt.Errorf("find interface: %w", err)
	}
	a := l.Attrs()
	if a.EncapType != "ether" && a.EncapType != "loopback" {
		return 0, 0, fmt.Errorf("%s is a %q device: %w: only Ethernet frames are parsed", iface, a.EncapType, ErrNotSupported)
	}
	return a.Index, a.MTU, nil
}

// readCounters reads iface's packet counters in the calling thread's
// network namespace.
func readCounters(iface string) (linkCounters, error) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return linkCounters{}, fmt.Errorf("read the counters of %s: %w", iface, err)
	}
	s := l.Attrs().Statistics
	if s == nil {
		return linkCounters{}, fmt.Errorf("read the counters of %s: the kernel sent none", iface)
	}
	return linkCounters{rx: s.RxPackets, tx: s.TxPackets}, nil
}
