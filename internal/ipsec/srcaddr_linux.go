package ipsec

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// tunnelSourceIf is where ensureSourceAddr puts the node's address inside
// LocalNet when it has none.
const tunnelSourceIf = "lo"

// ensureSourceAddr makes sure the node (network namespace netnsFd) has an
// IPv4 address inside localNet, and returns how to undo what it did.
//
// kernel-libipsec installs a CHILD_SA's outbound policy together with a
// route for the remote traffic selector into ipsec0, whose preferred
// source must be a local address inside the local traffic selector
// (kernel_libipsec_ipsec.c: install_route, get_address_by_ts). Without one
// it logs "error installing route with policy", refuses the policies and
// thus the CHILD_SA: the responder answers every CREATE_CHILD_SA with
// TS_UNACCEPTABLE while the IKE_SA stays up. Nodes whose pods are /32
// addresses behind proxy-ARP veths (the lab's veth-routing datapath, like
// Calico's) have no address in their pod CIDR; real CNIs give the node one
// from its block (Calico's tunnel address, Cilium's cilium_host).
//
// If the node has none, ensureSourceAddr adds localNet's network address
// (which the lab never gives a pod) as a /32 on lo, before charon starts so
// that charon's first address dump already holds it; undo removes it. If
// the node already has one (a bridge gateway, the tests' loopback pod
// address), it changes nothing and undo is a no-op.
func ensureSourceAddr(netnsFd int, localNet netip.Prefix) (addr netip.Addr, undo func() error, err error) {
	noop := func() error { return nil }
	h, err := netlink.NewHandleAt(netns.NsHandle(netnsFd))
	if err != nil {
		return netip.Addr{}, nil, fmt.Errorf("netlink in the node's netns: %w", err)
	}
	addrs, err := h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		h.Close()
		return netip.Addr{}, nil, fmt.Errorf("list the node's addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && localNet.Contains(ip.Unmap()) {
			h.Close()
			return ip.Unmap(), noop, nil
		}
	}
	if localNet.Bits() >= localNet.Addr().BitLen()-1 {
		// A /31 or /32 has no spare network address: it would take a
		// pod's.
		h.Close()
		return netip.Addr{}, nil, fmt.Errorf("the node has no address in %v, which kernel-libipsec needs as the source of its route into %s, and %v is too small to spare one", localNet, tunInterface, localNet)
	}
	addr = localNet.Masked().Addr()
	lo, err := h.LinkByName(tunnelSourceIf)
	if err != nil {
		h.Close()
		return netip.Addr{}, nil, fmt.Errorf("find %s: %w", tunnelSourceIf, err)
	}
	if lo.Attrs().Flags&unix.IFF_UP == 0 {
		// A route's preferred source must be a local address in use:
		// one on a down device is not.
		h.Close()
		return netip.Addr{}, nil, fmt.Errorf("%s is down: cannot give the node a source address in %v for kernel-libipsec's routes", tunnelSourceIf, localNet)
	}
	nlAddr := &netlink.Addr{IPNet: netlink.NewIPNet(addr.AsSlice())}
	if err := h.AddrAdd(lo, nlAddr); err != nil {
		h.Close()
		return netip.Addr{}, nil, fmt.Errorf("add %v to %s (source of kernel-libipsec's routes): %w", addr, tunnelSourceIf, err)
	}
	// The handle stays open (its socket is in the node's namespace) until
	// undo, which may run after the caller's fd is gone.
	return addr, func() error {
		defer h.Close()
		if err := h.AddrDel(lo, nlAddr); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("remove %v from %s: %w", addr, tunnelSourceIf, err)
		}
		return nil
	}, nil
}
