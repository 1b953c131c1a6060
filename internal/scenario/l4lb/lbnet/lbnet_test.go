package lbnet

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
)

func TestL4LBModeParse(t *testing.T) {
	modes := Modes()
	if len(modes) != 12 {
		t.Fatalf("%d modes, want 12", len(modes))
	}
	seen := map[string]bool{}
	for _, m := range modes {
		if err := m.Validate(); err != nil {
			t.Errorf("%v: %v", m, err)
		}
		s := m.String()
		if seen[s] {
			t.Errorf("label %q twice", s)
		}
		seen[s] = true
		back, err := ParseMode(s)
		if err != nil || back != m {
			t.Errorf("ParseMode(%q) = %+v, %v; want %+v", s, back, err, m)
		}
		if p := m.PacketPath(); !strings.Contains(p, "reply:") {
			t.Errorf("%v: packet path %q", m, p)
		}
	}
	if m, err := ParseMode("kubeproxy-vxlan"); err != nil || m != (Mode{LB: KubeProxy, Transport: VXLAN}) || !strings.Contains(m.PacketPath(), "DNAT") {
		t.Errorf("kubeproxy-vxlan: %+v, %v", m, err)
	}
	if m, err := ParseMode("dsr-vxlan-fw"); err != nil || m != (Mode{LB: DSR, Transport: VXLAN, Firewall: true}) {
		t.Errorf("dsr-vxlan-fw: %+v, %v", m, err)
	}
	v6, err := ParseMode("snat-direct-ipv6")
	if err != nil || !v6.IPv6 {
		t.Fatalf("snat-direct-ipv6: %+v, %v (parses; Validate refuses it)", v6, err)
	}
	if err := v6.Validate(); !errors.Is(err, lab.ErrNotSupported) {
		t.Errorf("IPv6 mode: %v, want lab.ErrNotSupported", err)
	}
	for _, bad := range []string{"", "snat", "snat-", "nat-direct", "snat-ipip", "snat-direct-fw-fw", "snat-direct-ipv6-fw", "SNAT-direct", "snat-direct-x", "a-b-c-d-e"} {
		if m, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) = %+v, want an error", bad, m)
		}
	}
	if err := (Mode{LB: SNAT}).Validate(); err == nil {
		t.Error("mode without transport accepted")
	}
}

// TestL4LBAddressing: the plan's invariants the datapath relies on: the
// segment holds every member and neither the VIPs nor the tunnel
// addresses (so that only the clients' route takes the VIP to the LB);
// the firewall tells the two clients apart by prefix; the backends are in
// their workers' pod CIDRs.
func TestL4LBAddressing(t *testing.T) {
	members := []netip.Addr{ClientIP, ClientFWIP, NodeIP, WorkerIPs[0], WorkerIPs[1]}
	for _, a := range members {
		if !ExtNet.Contains(a) {
			t.Errorf("%v is not on the segment %v", a, ExtNet)
		}
	}
	for _, p := range []netip.Prefix{VIPNet, TunnelNet} {
		if p.Overlaps(ExtNet) {
			t.Errorf("%v overlaps the segment %v", p, ExtNet)
		}
	}
	if !VIPNet.Contains(VIP) || !TunnelNet.Contains(TunnelIP) {
		t.Error("VIP or tunnel address outside its range")
	}
	if !ClientPrefix.Contains(ClientIP) || ClientPrefix.Contains(ClientFWIP) || !ClientFWPrefix.Contains(ClientFWIP) {
		t.Error("the firewall cannot tell the clients apart by prefix")
	}
	for _, p := range allowPrefixes {
		for _, a := range []netip.Addr{ClientFWIP, NodeIP, TunnelIP} {
			if p.Contains(a) {
				t.Errorf("allowed prefix %v admits %v", p, a)
			}
		}
	}
	// The lab's pod CIDRs (PodCIDRs, Linux only).
	podCIDRs := []netip.Prefix{netip.MustParsePrefix("198.19.1.0/24"), netip.MustParsePrefix("198.19.2.0/24")}
	for i, b := range BackendIPs {
		if !podCIDRs[i].Contains(b) {
			t.Errorf("backend %v not in worker %d's pod CIDR %v", b, i+1, podCIDRs[i])
		}
	}
	roles := append([]string{RoleSwitch, RoleClient, RoleClientFW, RoleLB}, WorkerRoles[:]...)
	for _, r := range append(roles, BackendRoles[:]...) {
		if len(r) > 8 || strings.Contains(r, "-") {
			t.Errorf("role %q: at most 8 characters, no '-'", r)
		}
		if p, ok := lab.ParseNSName(lab.NSName("abc123", DatapathName, r)); !ok || p.Role != r || p.Datapath != DatapathName {
			t.Errorf("role %q does not survive the namespace name: %+v", r, p)
		}
	}
}

// FuzzParseMode: ParseMode never panics, and what it accepts is
// exactly String's form: it prints back to its input.
func FuzzParseMode(f *testing.F) {
	for _, m := range Modes() {
		f.Add(m.String())
	}
	f.Add("dsr-vxlan-fw-ipv6")
	f.Add("snat-direct-ipv6")
	f.Add("-")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			return
		}
		if m.String() != s {
			t.Fatalf("ParseMode(%q) = %+v, which prints as %q", s, m, m.String())
		}
		v := m
		v.IPv6 = false
		if err := v.Validate(); err != nil {
			t.Fatalf("ParseMode(%q) accepted an invalid mode: %v", s, err)
		}
	})
}
