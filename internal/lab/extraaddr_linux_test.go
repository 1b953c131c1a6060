package lab_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

func TestValidateExtraAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"240.1.2.3", true},
		{"240.0.0.0", true},
		{"255.255.255.254", true},
		{"255.255.255.255", false},
		{"239.255.255.255", false},
		{"10.0.0.1", false},
		{"198.19.2.20", false},
		{"::1", false},
		{"::ffff:240.1.2.3", false},
	} {
		err := lab.ValidateExtraAddr(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("ValidateExtraAddr(%s) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
	if err := lab.ValidateExtraAddr(netip.Addr{}); err == nil {
		t.Error("ValidateExtraAddr(invalid) = nil")
	}
}

// TestAddServerAddress gives the server pod of each routed datapath an extra
// 240/4 address, checks the client pods reach it (UDP echo), removes it and
// checks nothing is left; other datapaths refuse with ErrNotSupported.
func TestAddServerAddress(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{"veth-routing", "veth-routing-notrack", "ebpf-host-routing", "bridge"}})
	extra := netip.MustParseAddr("240.1.2.3")
	ctx := context.Background()
	for _, name := range l.Datapaths() {
		t.Run(name, func(t *testing.T) {
			_, topo, err := l.Datapath(name)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := l.Endpoint(name, lab.CrossNode)
			if err != nil {
				t.Fatal(err)
			}
			if name == "bridge" {
				if ep.ClientNode != nil || ep.ClientNodeDev != "" {
					t.Errorf("bridge fills ClientNode %v / ClientNodeDev %q", ep.ClientNode, ep.ClientNodeDev)
				}
				if _, err := topo.AddServerAddress(ctx, ep, extra); !errors.Is(err, lab.ErrNotSupported) {
					t.Errorf("AddServerAddress on bridge = %v, want ErrNotSupported", err)
				}
				return
			}
			if ep.ClientNode == nil || ep.ClientNode != topo.Nodes[0] || ep.ClientNodeDev != "veth-client1" {
				t.Errorf("cross-node ClientNode/ClientNodeDev = %v/%q, want node1/veth-client1", ep.ClientNode, ep.ClientNodeDev)
			}
			if _, err := topo.AddServerAddress(ctx, ep, netip.MustParseAddr("198.19.2.99")); err == nil {
				t.Error("AddServerAddress accepted an address outside 240.0.0.0/4")
			}
			remove, err := topo.AddServerAddress(ctx, ep, extra)
			if err != nil {
				t.Fatalf("AddServerAddress: %v", err)
			}
			t.Cleanup(func() { _ = remove(ctx) })
			srv := testutil.StartUDPEcho(t, ep.Server.Do, extra)
			for _, kind := range []lab.PathKind{lab.CrossNode, lab.SameNode} {
				e, err := l.Endpoint(name, kind)
				if err != nil {
					t.Fatal(err)
				}
				if err := testutil.UDPRoundTripDF(e.Client.Do, srv, 100); err != nil {
					t.Errorf("%s: UDP to %s: %v", kind, srv, err)
				}
			}
			for _, n := range topo.Nodes {
				counters, err := lab.NftCounters(n)
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := counters["extra-addr "+extra.String()]; !ok || (name == "veth-routing" && got == 0) {
					t.Errorf("%s: nft rule for %s: counted %d (present %v); want present, and hit in veth-routing", n.Name, extra, got, ok)
				}
			}
			if _, err := topo.AddServerAddress(ctx, ep, extra); err == nil {
				t.Error("adding the same address twice succeeded")
			}
			if err := remove(ctx); err != nil {
				t.Fatalf("remove: %v", err)
			}
			if err := remove(ctx); err != nil {
				t.Errorf("second remove: %v", err)
			}
			assertNoExtra(t, ep, topo, extra)
			if udpArrives(t, ep, extra) {
				t.Error("a datagram to the removed address still arrived")
			}
		})
	}
}

func assertNoExtra(t *testing.T, ep lab.Endpoint, topo *lab.Topology, extra netip.Addr) {
	t.Helper()
	addrs, err := ep.Server.Handle().AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a.IP.Equal(net.IP(extra.AsSlice())) {
			t.Errorf("server still has %s", a.IPNet)
		}
	}
	for _, n := range topo.Nodes {
		rs, err := n.Handle().RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: &net.IPNet{IP: net.IP(extra.AsSlice()), Mask: net.CIDRMask(32, 32)}}, netlink.RT_FILTER_DST)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) > 0 {
			t.Errorf("%s still routes %s: %v", n.Name, extra, rs)
		}
		counters, err := lab.NftCounters(n)
		if err != nil {
			t.Fatal(err)
		}
		for name := range counters {
			if strings.HasPrefix(name, "extra-addr") {
				t.Errorf("%s still has nft rule %q", n.Name, name)
			}
		}
	}
}

// udpArrives sends a few datagrams from the client to addr and reports
// whether any reached a socket on the server pod's wildcard address.
func udpArrives(t *testing.T, ep lab.Endpoint, addr netip.Addr) bool {
	t.Helper()
	var srv *net.UDPConn
	if err := ep.Server.Do(func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.LocalAddr().(*net.UDPAddr).Port
	var c *net.UDPConn
	if err := ep.Client.Do(func() (err error) {
		c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(port))))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		_, _ = c.Write([]byte("probe")) // errors (unreachable) mean it did not arrive
	}
	_ = srv.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, _, err := srv.ReadFromUDP(make([]byte, 64))
	return err == nil
}
