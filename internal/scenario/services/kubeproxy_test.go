package services

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestKubeProxyRulesGolden(t *testing.T) {
	ep := netip.MustParseAddrPort
	svcs := []Service{
		{Name: "default/echo:rr", VIP: netip.MustParseAddr("198.19.0.10"), Port: 80,
			Endpoints: []netip.AddrPort{ep("198.18.1.2:8080"), ep("198.18.2.2:8080"), ep("198.18.1.3:8080")}},
		{Name: "default/one:rr", VIP: netip.MustParseAddr("198.19.0.11"), Port: 81,
			Endpoints: []netip.AddrPort{ep("198.18.2.3:8081")}},
	}
	got, err := KubeProxyRules(svcs)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "kubeproxy.rules.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rules differ from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

func TestKubeProxyRulesShape(t *testing.T) {
	var svcs []Service
	for i := range 50 {
		s := Service{Name: fmt.Sprintf("ns/s%d:p", i), VIP: netip.AddrFrom4([4]byte{198, 19, byte(i / 250), byte(i%250 + 1)}), Port: 80}
		for j := range 4 {
			s.Endpoints = append(s.Endpoints, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(j), byte(i + 2)}), 8080))
		}
		svcs = append(svcs, s)
	}
	b, err := KubeProxyRules(svcs)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "-A KUBE-SERVICES "); n != 50 {
		t.Errorf("%d KUBE-SERVICES rules, want one per service", n)
	}
	if n := strings.Count(text, "-j DNAT"); n != 200 {
		t.Errorf("%d DNAT rules, want one per endpoint", n)
	}
	// 1/4, 1/3, 1/2 and an unconditional last rule per service.
	for _, p := range []string{"0.2500000000", "0.3333333333", "0.5000000000"} {
		if n := strings.Count(text, "--probability "+p); n != 50 {
			t.Errorf("probability %s appears %d times, want 50", p, n)
		}
	}
	seen := map[string]bool{}
	for _, s := range svcs {
		for _, c := range append([]string{SvcChain(s)}, SepChain(s, s.Endpoints[0]), SepChain(s, s.Endpoints[3])) {
			if len(c) > 28 {
				t.Errorf("chain %s longer than 28 characters", c)
			}
			if seen[c] {
				t.Errorf("chain name %s used twice", c)
			}
			seen[c] = true
		}
	}
	if !strings.HasPrefix(text, "*nat\n") || !strings.HasSuffix(text, "COMMIT\n") {
		t.Error("not one nat table")
	}
}

func TestKubeProxyRulesErrors(t *testing.T) {
	ep := []netip.AddrPort{netip.MustParseAddrPort("198.18.1.2:8080")}
	for _, tc := range []struct {
		name string
		s    Service
	}{
		{"no endpoints", Service{Name: "a", VIP: netip.MustParseAddr("198.19.0.1"), Port: 80}},
		{"no port", Service{Name: "a", VIP: netip.MustParseAddr("198.19.0.1"), Endpoints: ep}},
		{"IPv6 VIP", Service{Name: "a", VIP: netip.MustParseAddr("fd00::1"), Port: 80, Endpoints: ep}},
		{"endpoint without port", Service{Name: "a", VIP: netip.MustParseAddr("198.19.0.1"), Port: 80,
			Endpoints: []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("198.18.1.2"), 0)}}},
	} {
		if _, err := KubeProxyRules([]Service{tc.s}); err == nil || !strings.Contains(err.Error(), `service "a"`) {
			t.Errorf("%s: %v, want an error naming the service", tc.name, err)
		}
	}
}

func TestProbability(t *testing.T) {
	for n, want := range map[int]string{1: "1.0000000000", 2: "0.5000000000", 3: "0.3333333333", 7: "0.1428571429"} {
		if got := probability(n); got != want {
			t.Errorf("probability(%d) = %s, want %s", n, got, want)
		}
	}
}
