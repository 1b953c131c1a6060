package incluster

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/internal/kube"
)

// prefixes parses the CIDRs ss.
func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// blocks renders the ipBlocks of nps, one string per object: "cidr
// except e1 e2; cidr; …".
func blocks(nps []*networkingv1.NetworkPolicy) []string {
	var out []string
	for _, np := range nps {
		var bs []string
		for _, r := range np.Spec.Egress {
			for _, p := range r.To {
				s := p.IPBlock.CIDR
				if len(p.IPBlock.Except) > 0 {
					s += " except " + strings.Join(p.IPBlock.Except, " ")
				}
				bs = append(bs, s)
			}
		}
		out = append(out, strings.Join(bs, "; "))
	}
	return out
}

func TestDenyEgressPolicies(t *testing.T) {
	tests := []struct {
		name string
		deny []string
		max  int
		want []string // blocks per object
	}{
		{name: "none", max: 3, want: []string{"::/0; 0.0.0.0/0"}},
		{name: "one object", deny: []string{"10.0.0.0/8", "192.168.1.0/24"}, max: 3,
			want: []string{"::/0; 0.0.0.0/0 except 10.0.0.0/8 192.168.1.0/24"}},
		{name: "exactly max", deny: []string{"192.168.1.0/24", "10.0.0.0/8", "240.0.0.1/32"}, max: 3,
			want: []string{"::/0; 0.0.0.0/0 except 10.0.0.0/8 192.168.1.0/24 240.0.0.1/32"}},
		{name: "unmasked, duplicate and contained", deny: []string{"10.1.2.3/8", "10.0.0.0/8", "10.5.0.0/16", "10.0.0.0/8"}, max: 1,
			want: []string{"::/0; 0.0.0.0/0 except 10.0.0.0/8"}},
		{name: "split in two halves", deny: []string{"10.0.0.0/8", "20.0.0.0/8", "200.0.0.0/8"}, max: 2,
			want: []string{"::/0; 0.0.0.0/1 except 10.0.0.0/8 20.0.0.0/8", "128.0.0.0/1 except 200.0.0.0/8"}},
		{name: "one per object", deny: []string{"10.0.0.0/8", "20.0.0.0/8", "200.0.0.0/8"}, max: 1,
			want: []string{"::/0; 0.0.0.0/4 except 10.0.0.0/8", "16.0.0.0/4 except 20.0.0.0/8; 32.0.0.0/3; 64.0.0.0/2", "128.0.0.0/1 except 200.0.0.0/8"}},
		{name: "deny covers a region", deny: []string{"0.0.0.0/1", "200.0.0.0/8"}, max: 1,
			want: []string{"::/0; 128.0.0.0/1 except 200.0.0.0/8"}},
		{name: "everything denied", deny: []string{"0.0.0.0/0", "10.0.0.0/8"}, max: 5,
			want: []string{"::/0"}},
	}
	sel := metav1.LabelSelector{MatchLabels: map[string]string{kube.RoleKey: "client"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nps, err := DenyEgressPolicies("deny", "ns", sel, prefixes(t, tt.deny...), tt.max, kube.RunLabels("r1"))
			if err != nil {
				t.Fatal(err)
			}
			if got := blocks(nps); !slices.Equal(got, tt.want) {
				t.Errorf("blocks\n%q\nwant\n%q", got, tt.want)
			}
			for i, np := range nps {
				if np.Name != "deny-"+string(rune('0'+i)) || np.Namespace != "ns" || np.Labels[kube.RunKey] != "r1" || np.Kind != "NetworkPolicy" ||
					np.Spec.PodSelector.MatchLabels[kube.RoleKey] != "client" || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
					t.Errorf("object %d: %+v", i, np)
				}
			}
		})
	}
}

// Two adjacent hosts at one CIDR per object: the halves of 10.0.0.0/31
// are both covered, so the region goes; what is left are the siblings on
// the way down, without excepts, in one object.
func TestDenyEgressPoliciesAdjacent(t *testing.T) {
	nps, err := DenyEgressPolicies("d", "ns", metav1.LabelSelector{}, prefixes(t, "10.0.0.1/32", "10.0.0.0/32"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := blocks(nps)
	if len(got) != 1 || strings.Contains(got[0], "except") || strings.Contains(got[0], "10.0.0.0/31") ||
		!strings.HasPrefix(got[0], "::/0; 0.0.0.0/5; 8.0.0.0/7; 10.0.0.2/31; 10.0.0.4/30;") || !strings.HasSuffix(got[0], "10.64.0.0/10; 10.128.0.0/9; 11.0.0.0/8; 12.0.0.0/6; 16.0.0.0/4; 32.0.0.0/3; 64.0.0.0/2; 128.0.0.0/1") {
		t.Errorf("blocks %q", got)
	}
}

// Regions are disjoint and in address order.
func TestDenyEgressPoliciesDisjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	deny := randomDeny(rng, 500)
	nps, err := DenyEgressPolicies("d", "ns", metav1.LabelSelector{}, deny, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cidrs []netip.Prefix
	for _, np := range nps {
		for _, p := range np.Spec.Egress[0].To {
			c := netip.MustParsePrefix(p.IPBlock.CIDR)
			if c.Addr().Is4() {
				cidrs = append(cidrs, c)
			}
		}
	}
	for i := 1; i < len(cidrs); i++ {
		if cidrs[i-1].Overlaps(cidrs[i]) || cidrs[i-1].Addr().Compare(cidrs[i].Addr()) >= 0 {
			t.Fatalf("regions %v and %v overlap or are out of order", cidrs[i-1], cidrs[i])
		}
	}
}

func TestDenyEgressPoliciesErrors(t *testing.T) {
	good := prefixes(t, "10.0.0.0/8")
	tests := []struct {
		name, policy, ns string
		sel              metav1.LabelSelector
		deny             []netip.Prefix
		max              int
		labels           map[string]string
		err              string
	}{
		{name: "ipv6", policy: "d", ns: "ns", deny: prefixes(t, "10.0.0.0/8", "fd00::/8"), max: 1, err: "deny egress policies ns/d: deny CIDR fd00::/8 is not IPv4"},
		{name: "mapped", policy: "d", ns: "ns", deny: prefixes(t, "::ffff:10.0.0.0/104"), max: 1, err: "is not IPv4"},
		{name: "zero prefix", policy: "d", ns: "ns", deny: []netip.Prefix{{}}, max: 1, err: "deny CIDR #0 is not a valid prefix"},
		{name: "zero max", policy: "d", ns: "ns", deny: good, max: 0, err: "0 deny CIDRs per object: want at least 1"},
		{name: "no namespace", policy: "d", deny: good, max: 1, err: `namespace "" is not a valid namespace name`},
		{name: "bad name", policy: "D_x", ns: "ns", deny: good, max: 1, err: `object name "D_x-0" (from name "D_x") is not valid`},
		{name: "bad label", policy: "d", ns: "ns", deny: good, max: 1, labels: map[string]string{"a": "b c"}, err: `label a="b c": value not valid`},
		{name: "bad selector", policy: "d", ns: "ns", deny: good, max: 1,
			sel: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}, err: "invalid pod selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nps, err := DenyEgressPolicies(tt.policy, tt.ns, tt.sel, tt.deny, tt.max, tt.labels)
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want %q on one line", err, tt.err)
			}
			if nps != nil {
				t.Errorf("objects with an error: %v", nps)
			}
		})
	}
}

// randomDeny returns n random IPv4 prefixes: a third anywhere (/8 … /32),
// the rest clustered in 240.0.0.0/4 as the egress scenario's generator
// places them, so that they overlap and nest.
func randomDeny(rng *rand.Rand, n int) []netip.Prefix {
	out := make([]netip.Prefix, n)
	for i := range out {
		v := rng.Uint32()
		bits := 8 + rng.IntN(25)
		if i%3 != 0 {
			v = 0xf0000000 | v&0x000fffff // 240.0.0.0/12
			bits = 16 + rng.IntN(17)
		}
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		out[i] = netip.PrefixFrom(a, bits)
	}
	return out
}

// allowed reports whether a is allowed by the union of the ipBlocks of
// nps: inside an ipBlock's cidr and in none of its excepts.
func allowed(t *testing.T, blocks []parsedBlock, a netip.Addr) bool {
	t.Helper()
	for _, b := range blocks {
		if !b.cidr.Contains(a) {
			continue
		}
		if !slices.ContainsFunc(b.except, func(e netip.Prefix) bool { return e.Contains(a) }) {
			return true
		}
	}
	return false
}

type parsedBlock struct {
	cidr   netip.Prefix
	except []netip.Prefix
}

// parseBlocks parses the ipBlocks of nps, checking what the API server
// validates (a valid cidr, excepts strict subsets of it) and the limits.
func parseBlocks(t *testing.T, nps []*networkingv1.NetworkPolicy, maxPerObject int) []parsedBlock {
	t.Helper()
	var out []parsedBlock
	for _, np := range nps {
		if len(np.Spec.Egress) != 1 {
			t.Fatalf("%s: %d egress rules", np.Name, len(np.Spec.Egress))
		}
		excepts := 0
		if n := len(np.Spec.Egress[0].To); n == 0 || n > maxIPBlocksPerPolicy {
			t.Fatalf("%s: %d ipBlocks", np.Name, n)
		}
		for _, p := range np.Spec.Egress[0].To {
			c, err := netip.ParsePrefix(p.IPBlock.CIDR)
			if err != nil || c != c.Masked() {
				t.Fatalf("%s: cidr %q: %v", np.Name, p.IPBlock.CIDR, err)
			}
			b := parsedBlock{cidr: c}
			for _, e := range p.IPBlock.Except {
				ep, err := netip.ParsePrefix(e)
				if err != nil || !c.Contains(ep.Addr()) || ep.Bits() <= c.Bits() {
					t.Fatalf("%s: except %s not a strict subset of %s (%v)", np.Name, e, c, err)
				}
				b.except = append(b.except, ep)
			}
			excepts += len(b.except)
			out = append(out, b)
		}
		if excepts > maxPerObject {
			t.Errorf("%s: %d excepts > %d", np.Name, excepts, maxPerObject)
		}
	}
	return out
}

// For random deny sets, an address is allowed by the union of all the
// objects' ipBlocks iff it is in no deny CIDR; every object holds at most
// maxPerObject excepts.
func TestDenyEgressPoliciesProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		n := rng.IntN(3000)
		if round%10 == 0 {
			n = rng.IntN(5)
		}
		maxPer := []int{1, 2, 3, 7, 50, 1000, kube.DefaultPolicyChunk}[rng.IntN(7)]
		deny := randomDeny(rng, n)
		nps, err := DenyEgressPolicies("p", "ns", metav1.LabelSelector{}, deny, maxPer, nil)
		if err != nil {
			t.Fatal(err)
		}
		bs := parseBlocks(t, nps, maxPer)
		denied := func(a netip.Addr) bool {
			return slices.ContainsFunc(deny, func(p netip.Prefix) bool { return p.Contains(a) })
		}
		check := func(a netip.Addr) {
			if got, want := allowed(t, bs, a), !denied(a); got != want {
				t.Fatalf("round %d (%d CIDRs, %d per object): %s allowed %v, want %v", round, n, maxPer, a, got, want)
			}
		}
		// The edges of every deny CIDR and their neighbours, and random
		// addresses, anywhere and in the clustered range.
		for _, p := range deny {
			first := p.Masked().Addr()
			last := lastAddr(p)
			for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
				if a.IsValid() {
					check(a)
				}
			}
		}
		for range 2000 {
			v := rng.Uint32()
			if rng.IntN(2) == 0 {
				v = 0xf0000000 | v&0x000fffff
			}
			check(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}))
		}
		for _, a := range []string{"::1", "2001:db8::1", "fd00::5"} {
			if !allowed(t, bs, netip.MustParseAddr(a)) {
				t.Fatalf("IPv6 %s not allowed", a)
			}
		}
		size := 0
		for _, np := range nps {
			size += kube.ObjectBytes(np)
		}
		if round < 5 {
			t.Logf("%d deny CIDRs, %d per object: %d objects, %d bytes of JSON", n, maxPer, len(nps), size)
		}
	}
}

// lastAddr returns the last address of IPv4 prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= uint32(uint64(1)<<(32-p.Bits()) - 1)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Seed 004's scale: 200 000 disjoint /32s at the default chunk make a few
// objects, each below etcd's 1.5 MiB request limit.
func TestDenyEgressPoliciesScale(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	deny := make([]netip.Prefix, 200000)
	for i := range deny {
		v := 0xf0000000 | uint32(i)*7
		deny[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), 32)
	}
	nps, err := DenyEgressPolicies("p", "ns", metav1.LabelSelector{MatchLabels: map[string]string{kube.RoleKey: "client"}}, deny, kube.DefaultPolicyChunk, kube.RunLabels("r"))
	if err != nil {
		t.Fatal(err)
	}
	parseBlocks(t, nps, kube.DefaultPolicyChunk)
	total := 0
	for _, np := range nps {
		b := kube.ObjectBytes(np)
		total += b
		if b > 1536*1024 {
			t.Errorf("%s: %d bytes, above etcd's 1.5 MiB request limit", np.Name, b)
		}
	}
	if len(nps) < 4 || len(nps) > 8 {
		t.Errorf("%d objects for 200 000 CIDRs at %d per object", len(nps), kube.DefaultPolicyChunk)
	}
	t.Logf("200 000 deny CIDRs at %d per object: %d objects, %d bytes of JSON (largest %d)", kube.DefaultPolicyChunk, len(nps), total,
		slices.Max(func() []int {
			var s []int
			for _, np := range nps {
				s = append(s, kube.ObjectBytes(np))
			}
			return s
		}()))
}
