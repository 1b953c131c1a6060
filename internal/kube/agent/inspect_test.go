package agent

import (
	"net/netip"
	"slices"
	"testing"
)

func TestEncapsulationAndAddr(t *testing.T) {
	links := []Link{
		{Name: "lo", Type: "device", Addrs: []string{"127.0.0.1/8", "::1/128"}},
		{Name: "eth0", Type: "device", MTU: 1500, Addrs: []string{"10.0.0.5/24", "fd00::5/64"}},
		{Name: "flannel.1", Type: "vxlan", MTU: 1450, VNI: 1, Port: 8472},
		{Name: "cilium_geneve", Type: "geneve", MTU: 1500, Port: 6081, External: true},
		{Name: "wg0", Type: "wireguard", MTU: 1420},
		{Name: "tunl0", Type: "ipip", MTU: 1480},
		{Name: "cni0", Type: "bridge", MTU: 1450},
		{Name: "veth1", Type: "veth", MTU: 1450},
	}
	enc := Tunnels(links)
	want := []Encap{
		{Name: "flannel.1", Type: "vxlan", MTU: 1450, Overhead: 50, VNI: 1, Port: 8472},
		{Name: "cilium_geneve", Type: "geneve", MTU: 1500, Overhead: 50, Port: 6081, External: true},
		{Name: "wg0", Type: "wireguard", MTU: 1420, Overhead: 60},
		{Name: "tunl0", Type: "ipip", MTU: 1480, Overhead: 20},
	}
	if len(enc) != len(want) {
		t.Fatalf("got %+v", enc)
	}
	for i := range want {
		if enc[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, enc[i], want[i])
		}
	}
	if Tunnels(nil) == nil {
		t.Error("nil list: want [] in the JSON")
	}
	for addr, link := range map[string]string{
		"10.0.0.5": "eth0", "::ffff:10.0.0.5": "eth0", "fd00::5": "eth0", "::1": "lo", "10.0.0.6": "",
	} {
		if got := LinkWithAddr(links, netip.MustParseAddr(addr)); got != link {
			t.Errorf("LinkWithAddr(%s) = %q, want %q", addr, got, link)
		}
	}
	in := Inspect{Links: links}
	in.setAddr(netip.MustParseAddr("10.9.9.9"))
	if in.Addr != "10.9.9.9" || in.AddrLink() != "" || in.AddrError == "" || in.AddrMTU() != 0 {
		t.Errorf("setAddr: %+v", in)
	}
}

func TestInspectHelpers(t *testing.T) {
	links := []Link{
		{Name: "lo", Type: "device", MTU: 65536, State: "up", Addrs: []string{"127.0.0.1/8"}},
		{Name: "eth0", Type: "device", MTU: 9001, State: "up", Addrs: []string{"10.0.0.5/24"}},
		{Name: "tunl0", Type: "ipip", MTU: 1480, State: "down"},
		{Name: "flannel.1", Type: "vxlan", MTU: 8951, State: "up", VNI: 1},
		{Name: "flannel-wg", Type: "wireguard", MTU: 8921, State: "up"},
	}
	in := Inspect{Links: links, Tunnels: Tunnels(links), DefaultRoute6: &Route{Dev: "flannel.1"}}
	in.setAddr(netip.MustParseAddr("10.0.0.5"))
	if in.AddrLink() != "eth0" || in.AddrMTU() != 9001 || in.DefaultRouteMTU() != 8951 {
		t.Errorf("addr link %q MTU %d, default route MTU %d", in.AddrLink(), in.AddrMTU(), in.DefaultRouteMTU())
	}
	in.DefaultRoute = &Route{Dev: "eth0", Gateway: "10.0.0.1"}
	if in.DefaultRouteMTU() != 9001 || in.DefaultRouteMTUFrom() != "interface" {
		t.Errorf("IPv4 default route first: MTU %d from %s", in.DefaultRouteMTU(), in.DefaultRouteMTUFrom())
	}
	// Cilium's pods: the interface at the node's MTU, the route lowered.
	in.DefaultRoute.MTU = 8951
	if in.DefaultRouteMTU() != 8951 || in.DefaultRouteMTUFrom() != "route" {
		t.Errorf("route MTU: %d from %s, want 8951 from route", in.DefaultRouteMTU(), in.DefaultRouteMTUFrom())
	}
	// A route MTU above the link's cannot raise it.
	in.DefaultRoute.MTU = 9500
	if in.DefaultRouteMTU() != 9001 {
		t.Errorf("route MTU above the link's: %d", in.DefaultRouteMTU())
	}
	in.DefaultRoute.MTU = 0
	tunnels, overhead := in.Encapsulation()
	if !slices.Equal(tunnels, []string{"vxlan flannel.1", "wireguard flannel-wg"}) || overhead != 60 {
		t.Errorf("Encapsulation() = %q, %d", tunnels, overhead)
	}
	if tunnels, overhead := (&Inspect{Links: links[:3], Tunnels: Tunnels(links[:3])}).Encapsulation(); tunnels != nil || overhead != 0 {
		t.Errorf("only a tunnel that is down: %q, %d", tunnels, overhead)
	}
}
