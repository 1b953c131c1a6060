package wireguard

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestRoutePods moves a routed node's route to the other node's pods onto a
// tunnel device and back, in a scratch namespace (veth pairs stand in for
// the wire and the tunnel).
func TestRoutePods(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	_, h, _ := scratchNS(t)
	for _, pair := range [][2]string{{"wire0", "wire0p"}, {"wgt0", "wgt0p"}} {
		if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: pair[0]}, PeerName: pair[1]}); err != nil {
			t.Fatal(err)
		}
		for _, n := range pair {
			l, err := h.LinkByName(n)
			if err == nil {
				err = h.LinkSetUp(l)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wire, _ := h.LinkByName("wire0")
	tunnel, _ := h.LinkByName("wgt0")
	if err := h.AddrAdd(wire, &netlink.Addr{IPNet: prefixNet(netip.MustParsePrefix("198.18.0.1/24"))}); err != nil {
		t.Fatal(err)
	}
	pods := netip.MustParsePrefix("198.19.2.0/24")
	orig := &netlink.Route{LinkIndex: wire.Attrs().Index, Dst: prefixNet(pods), Gw: net.ParseIP("198.18.0.2")}
	if err := h.RouteAdd(orig); err != nil {
		t.Fatal(err)
	}
	routesTo := func() []netlink.Route {
		t.Helper()
		rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: prefixNet(pods)}, netlink.RT_FILTER_DST)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}

	pr, err := RoutePods(h, "wgt0", pods)
	if err != nil {
		t.Fatal(err)
	}
	if rs := routesTo(); len(rs) != 1 || rs[0].LinkIndex != tunnel.Attrs().Index || rs[0].Gw != nil || rs[0].Scope != netlink.SCOPE_LINK {
		t.Fatalf("after RoutePods: %v, want one link-scope route dev wgt0", rs)
	}
	if o := pr.Original(); o == nil || !o.Gw.Equal(orig.Gw) {
		t.Errorf("Original() = %v, want the route via 198.18.0.2", o)
	}
	if err := pr.Restore(); err != nil {
		t.Fatal(err)
	}
	if rs := routesTo(); len(rs) != 1 || rs[0].LinkIndex != wire.Attrs().Index || !rs[0].Gw.Equal(orig.Gw) {
		t.Fatalf("after Restore: %v, want via 198.18.0.2 dev wire0", rs)
	}
	if err := pr.Restore(); err != nil {
		t.Fatalf("second Restore: %v", err)
	}

	// The tunnel device went away first (the route with it): Restore still
	// puts the original back.
	pr, err = RoutePods(h, "wgt0", pods)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkDel(tunnel); err != nil {
		t.Fatal(err)
	}
	if err := pr.Restore(); err != nil {
		t.Fatal(err)
	}
	if rs := routesTo(); len(rs) != 1 || !rs[0].Gw.Equal(orig.Gw) {
		t.Fatalf("after Restore with the tunnel gone: %v", rs)
	}

	// No route before: Restore removes the tunnel's.
	other := netip.MustParsePrefix("198.19.3.0/24")
	pr, err = RoutePods(h, "wire0", other)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Original() != nil {
		t.Errorf("Original() = %v, want nil", pr.Original())
	}
	if err := pr.Restore(); err != nil {
		t.Fatal(err)
	}
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: prefixNet(other)}, netlink.RT_FILTER_DST)
	if err != nil || len(rs) != 0 {
		t.Fatalf("after Restore of a new route: %v, %v; want none", rs, err)
	}

	if _, err := RoutePods(h, "wire0", netip.MustParsePrefix("198.19.2.1/24")); err == nil {
		t.Error("RoutePods accepted a pod CIDR with host bits")
	}
	if _, err := RoutePods(h, "nosuch0", pods); err == nil {
		t.Error("RoutePods accepted a missing device")
	}
}
