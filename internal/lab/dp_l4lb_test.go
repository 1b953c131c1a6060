package lab

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestL4LBModeParse(t *testing.T) {
	modes := L4LBModes()
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
		back, err := ParseL4LBMode(s)
		if err != nil || back != m {
			t.Errorf("ParseL4LBMode(%q) = %+v, %v; want %+v", s, back, err, m)
		}
		if p := m.PacketPath(); !strings.Contains(p, "reply:") {
			t.Errorf("%v: packet path %q", m, p)
		}
	}
	if m, err := ParseL4LBMode("kubeproxy-vxlan"); err != nil || m != (L4LBMode{LB: L4LBKubeProxy, Transport: L4LBVXLAN}) || !strings.Contains(m.PacketPath(), "DNAT") {
		t.Errorf("kubeproxy-vxlan: %+v, %v", m, err)
	}
	if m, err := ParseL4LBMode("dsr-vxlan-fw"); err != nil || m != (L4LBMode{LB: L4LBDSR, Transport: L4LBVXLAN, Firewall: true}) {
		t.Errorf("dsr-vxlan-fw: %+v, %v", m, err)
	}
	v6, err := ParseL4LBMode("snat-direct-ipv6")
	if err != nil || !v6.IPv6 {
		t.Fatalf("snat-direct-ipv6: %+v, %v (parses; Validate refuses it)", v6, err)
	}
	if err := v6.Validate(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("IPv6 mode: %v, want ErrNotSupported", err)
	}
	for _, bad := range []string{"", "snat", "snat-", "nat-direct", "snat-ipip", "snat-direct-fw-fw", "snat-direct-ipv6-fw", "SNAT-direct", "snat-direct-x", "a-b-c-d-e"} {
		if m, err := ParseL4LBMode(bad); err == nil {
			t.Errorf("ParseL4LBMode(%q) = %+v, want an error", bad, m)
		}
	}
	if err := (L4LBMode{LB: L4LBSNAT}).Validate(); err == nil {
		t.Error("mode without transport accepted")
	}
}

// TestL4LBAddressing: the plan's invariants the datapath relies on: the
// segment holds every member and neither the VIPs nor the tunnel
// addresses (so that only the clients' route takes the VIP to the LB);
// the firewall tells the two clients apart by prefix; the backends are in
// their workers' pod CIDRs.
func TestL4LBAddressing(t *testing.T) {
	members := []netip.Addr{L4LBClientIP, L4LBClientFWIP, L4LBNodeIP, L4LBWorkerIPs[0], L4LBWorkerIPs[1]}
	for _, a := range members {
		if !L4LBExtNet.Contains(a) {
			t.Errorf("%v is not on the segment %v", a, L4LBExtNet)
		}
	}
	for _, p := range []netip.Prefix{L4LBVIPNet, L4LBTunnelNet} {
		if p.Overlaps(L4LBExtNet) {
			t.Errorf("%v overlaps the segment %v", p, L4LBExtNet)
		}
	}
	if !L4LBVIPNet.Contains(L4LBVIP) || !L4LBTunnelNet.Contains(L4LBTunnelIP) {
		t.Error("VIP or tunnel address outside its range")
	}
	if !L4LBClientPrefix.Contains(L4LBClientIP) || L4LBClientPrefix.Contains(L4LBClientFWIP) || !L4LBClientFWPrefix.Contains(L4LBClientFWIP) {
		t.Error("the firewall cannot tell the clients apart by prefix")
	}
	for _, p := range l4lbAllowPrefixes {
		for _, a := range []netip.Addr{L4LBClientFWIP, L4LBNodeIP, L4LBTunnelIP} {
			if p.Contains(a) {
				t.Errorf("allowed prefix %v admits %v", p, a)
			}
		}
	}
	// The lab's pod CIDRs (PodCIDRs, Linux only).
	podCIDRs := []netip.Prefix{netip.MustParsePrefix("198.19.1.0/24"), netip.MustParsePrefix("198.19.2.0/24")}
	for i, b := range L4LBBackendIPs {
		if !podCIDRs[i].Contains(b) {
			t.Errorf("backend %v not in worker %d's pod CIDR %v", b, i+1, podCIDRs[i])
		}
	}
	roles := append([]string{L4LBRoleSwitch, L4LBRoleClient, L4LBRoleClientFW, L4LBRoleLB}, L4LBWorkerRoles[:]...)
	for _, r := range append(roles, L4LBBackendRoles[:]...) {
		if len(r) > 8 || strings.Contains(r, "-") {
			t.Errorf("role %q: at most 8 characters, no '-'", r)
		}
		if p, ok := ParseNSName(NSName("abc123", L4LBDatapathName, r)); !ok || p.Role != r || p.Datapath != L4LBDatapathName {
			t.Errorf("role %q does not survive the namespace name: %+v", r, p)
		}
	}
}

// FuzzParseL4LBMode: ParseL4LBMode never panics, and what it accepts is
// exactly String's form: it prints back to its input.
func FuzzParseL4LBMode(f *testing.F) {
	for _, m := range L4LBModes() {
		f.Add(m.String())
	}
	f.Add("dsr-vxlan-fw-ipv6")
	f.Add("snat-direct-ipv6")
	f.Add("-")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseL4LBMode(s)
		if err != nil {
			return
		}
		if m.String() != s {
			t.Fatalf("ParseL4LBMode(%q) = %+v, which prints as %q", s, m, m.String())
		}
		v := m
		v.IPv6 = false
		if err := v.Validate(); err != nil {
			t.Fatalf("ParseL4LBMode(%q) accepted an invalid mode: %v", s, err)
		}
	})
}
