// Package nstest holds test helpers that build network namespaces; it is
// apart from testutil because it imports nsrun, whose own tests use
// testutil.
package nstest

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// LoopbackNS creates a scratch network namespace, closed when the test
// ends, with its loopback up and addrs (IPv4, as /32) on it. It returns a
// Do that runs code inside it and a netlink handle there (closed with it).
func LoopbackNS(tb testing.TB, addrs ...string) (testutil.Do, *netlink.Handle) {
	tb.Helper()
	ns, err := nsrun.NewScratch()
	if err != nil {
		tb.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(); ns.Close() })
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		tb.Fatalf("loopback up: %v", err)
	}
	for _, a := range addrs {
		ip := netip.MustParseAddr(a)
		if err := h.AddrAdd(lo, &netlink.Addr{IPNet: netlink.NewIPNet(ip.AsSlice())}); err != nil {
			tb.Fatalf("add %s to lo: %v", a, err)
		}
	}
	return func(f func() error) error { return nsrun.Do(netns.NsHandle(ns), f) }, h
}
