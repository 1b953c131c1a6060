package filter

import (
	"testing"
)

func TestIPSetSizes(t *testing.T) {
	for _, tc := range []struct{ n, hash, maxelem int }{
		{10, 1024, 65536},
		{100_000, 32768, 101_024},
		{1_000_000, 262144, 1_001_024},
		{10_000_000, 4194304, 10_001_024},
	} {
		h, m := ipsetSizes(tc.n)
		if h != tc.hash || m != tc.maxelem {
			t.Errorf("ipsetSizes(%d) = %d, %d; want %d, %d", tc.n, h, m, tc.hash, tc.maxelem)
		}
	}
}

func TestNetfilterMechanismsRegistered(t *testing.T) {
	want := map[string]int{"none": 10_000_000, "iptables": 100_000, "iptables-legacy": 1_000_000, "ipset": 10_000_000, "nftables": 1_000_000}
	for name, max := range want {
		m, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Name() != name || m.MaxRules() != max {
			t.Errorf("%s: Name %q MaxRules %d, want %d", name, m.Name(), m.MaxRules(), max)
		}
	}
}
