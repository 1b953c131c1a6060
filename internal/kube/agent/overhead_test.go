package agent

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/ipsec"
)

func TestTunnelOverheadsAgree(t *testing.T) {
	// EncapOverhead (IPv4) and TunnelOverheads must not drift apart.
	for typ, o := range EncapOverhead {
		if TunnelOverheads[typ][0] != o {
			t.Errorf("%s: EncapOverhead %d, TunnelOverheads %v", typ, o, TunnelOverheads[typ])
		}
	}
	if len(EncapOverhead) != len(TunnelOverheads) {
		t.Errorf("%d and %d types", len(EncapOverhead), len(TunnelOverheads))
	}
}

func TestCNIOverhead(t *testing.T) {
	tests := []struct {
		cni     string
		tunnels []string
		ipv6    bool
		ipsec   bool
		want    int
		how     string
	}{
		{"flannel", []string{"vxlan"}, false, false, 50, "vxlan 50 over IPv4"},
		{"flannel", []string{"vxlan"}, true, false, 70, "vxlan 70 over IPv6"},
		{"calico", []string{"ipip"}, false, false, 20, "ipip 20"},
		{"calico", []string{"ipip"}, true, false, 40, "ipip 40"},
		{"calico", []string{"wireguard"}, false, false, 60, "wireguard 60 over IPv4"},
		{"calico", []string{"wireguard"}, true, false, 80, "wireguard 80"},
		{"flannel", []string{"wireguard"}, false, false, 80, "flannel reserves 80"},
		{"cilium", []string{"wireguard"}, false, false, 80, "cilium reserves 80"},
		{"cilium", []string{"vxlan", "wireguard"}, false, false, 130, "vxlan 50 + wireguard 80"},
		{"cilium", []string{"geneve"}, false, false, 50, "geneve 50"},
		{"cilium", []string{"vxlan"}, false, true, 127, "vxlan 50 + ipsec 77"},
		{"cilium", nil, false, true, 77, "ipsec 77"},
		{"calico", []string{"vxlan", "ipip"}, false, false, 50, "vxlan 50 or ipip 20"},
		{"calico", nil, false, true, 0, "no encapsulation"},
		{"bridge", []string{"dummy"}, false, false, 0, "no encapsulation"},
	}
	for _, tt := range tests {
		got, how := CNIOverhead(tt.cni, tt.tunnels, tt.ipv6, tt.ipsec)
		if got != tt.want || !strings.Contains(how, tt.how) {
			t.Errorf("CNIOverhead(%s, %v, v6 %v, ipsec %v) = %d %q, want %d %q", tt.cni, tt.tunnels, tt.ipv6, tt.ipsec, got, how, tt.want, tt.how)
		}
	}
}

func TestESPOverhead(t *testing.T) {
	for _, tt := range []struct {
		alg  ipsec.Algorithm
		ipv6 bool
		want int
		ok   bool
	}{
		{ipsec.AESGCM128, false, 54, true},
		{ipsec.AESGCM128, true, 74, true},
		{ipsec.AESCBCHMACSHA256, false, 62, true},
		{"rot13", false, 0, false},
	} {
		got, ok := ESPOverhead(tt.alg, tt.ipv6)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ESPOverhead(%s, %v) = %d %v, want %d %v", tt.alg, tt.ipv6, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEncapsulationFor(t *testing.T) {
	links := []Link{
		{Name: "eth0", Type: "device", MTU: 1500, State: "up", Addrs: []string{"fd00::10/64"}},
		{Name: "flannel-wg", Type: "wireguard", MTU: 1420, State: "up"},
		{Name: "tunl0", Type: "ipip", MTU: 1480, State: "down"},
	}
	in := Inspect{Links: links, Tunnels: Tunnels(links), Addr: "fd00::10"}
	tunnels, o, how := in.EncapsulationFor("flannel", false)
	if len(tunnels) != 1 || tunnels[0] != "wireguard flannel-wg" || o != 80 || !strings.Contains(how, "over IPv6") {
		t.Errorf("got %q %d %q", tunnels, o, how)
	}
	in.Addr = "::ffff:10.0.0.1"
	if in.UnderlayIPv6() {
		t.Error("an IPv4-mapped address is an IPv4 underlay")
	}
	if _, o, _ := in.EncapsulationFor("calico", false); o != 60 {
		t.Errorf("calico wireguard over IPv4: %d, want 60", o)
	}
}
