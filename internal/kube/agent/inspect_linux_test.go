package agent

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/testutil/nstest"
)

// TestInspectCurrentNetns reads the test's own namespace: it has lo.
func TestInspectCurrentNetns(t *testing.T) {
	in, err := InspectNetns(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	var lo *Link
	for i := range in.Links {
		if in.Links[i].Name == "lo" {
			lo = &in.Links[i]
		}
	}
	if in.Schema != SchemaInspect || lo == nil || lo.Type != "device" || lo.Addrs == nil {
		t.Fatalf("no lo among %+v", in.Links)
	}
	if lo.State == "up" && in.AddrLink() != "lo" {
		t.Errorf("127.0.0.1 on %q, want lo", in.AddrLink())
	}
}

// TestInspectScratchNetns builds links of each kind in a scratch
// namespace (root) and reads them back.
func TestInspectScratchNetns(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	do, h := nstest.LoopbackNS(t)
	mustLink := func(l netlink.Link) netlink.Link {
		t.Helper()
		if err := h.LinkAdd(l); err != nil {
			t.Fatalf("add %s %s: %v", l.Type(), l.Attrs().Name, err)
		}
		got, err := h.LinkByName(l.Attrs().Name)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	eth := mustLink(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0", MTU: 1500}, PeerName: "peer0"})
	ipn := &net.IPNet{IP: net.ParseIP("198.18.213.5").To4(), Mask: net.CIDRMask(24, 32)}
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipn}); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		t.Fatal(err)
	}
	vx := mustLink(&netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "vx0", MTU: 1450}, VxlanId: 42, Port: 8472,
		VtepDevIndex: eth.Attrs().Index})
	// Geneve where this kernel has it (the test machine's does not).
	geneve := h.LinkAdd(&netlink.Geneve{LinkAttrs: netlink.LinkAttrs{Name: "gnv0"}, FlowBased: true, Dport: 6081}) == nil
	br := mustLink(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}})
	if err := h.LinkSetMaster(vx, br); err != nil {
		t.Fatal(err)
	}
	gw := net.ParseIP("198.18.213.1")
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw}); err != nil {
		t.Fatal(err)
	}
	var in Inspect
	err := do(func() error {
		var err error
		in, err = InspectNetns(netip.MustParseAddr("198.18.213.5"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]Link{}
	for _, l := range in.Links {
		links[l.Name] = l
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"lo", links["lo"].Type == "device" && links["lo"].State == "up"},
		{"eth0", links["eth0"].Type == "veth" && links["eth0"].State == "up" && len(links["eth0"].Addrs) == 1 &&
			links["eth0"].Addrs[0] == "198.18.213.5/24" && links["eth0"].MAC != ""},
		{"vx0", links["vx0"].Type == "vxlan" && links["vx0"].VNI == 42 && links["vx0"].Port == 8472 &&
			links["vx0"].MTU == 1450 && links["vx0"].Master == "br0" && links["vx0"].State == "down"},
		{"gnv0", !geneve || links["gnv0"].Type == "geneve" && links["gnv0"].External && links["gnv0"].Port == 6081},
		{"br0", links["br0"].Type == "bridge"},
		{"default route", in.DefaultRoute != nil && *in.DefaultRoute == Route{Dev: "eth0", Gateway: "198.18.213.1"}},
		{"no IPv6 default route", in.DefaultRoute6 == nil},
		{"addr", in.Addr == "198.18.213.5" && in.AddrLink() == "eth0" && in.AddrError == ""},
		{"encapsulation", len(in.Tunnels) >= 1 && in.Tunnels[0] == Encap{Name: "vx0", Type: "vxlan", MTU: 1450, Overhead: 50, VNI: 42, Port: 8472} &&
			(!geneve || len(in.Tunnels) == 2 && in.Tunnels[1].Name == "gnv0" && in.Tunnels[1].Overhead == 50)},
		{"MTUs", in.AddrMTU() == 1500 && in.DefaultRouteMTU() == 1500},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: wrong in %+v", c.name, in)
		}
	}
}
