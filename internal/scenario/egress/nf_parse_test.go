package egress

import (
	"strings"
	"testing"
)

func TestParseDropCounter(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      uint64
		err       string
	}{
		{"drop chain", `Chain CNB-EGRESS-DROP (10 references)
    pkts      bytes target     prot opt in     out     source               destination
      17     1020 DROP       all  --  *      *       0.0.0.0/0            0.0.0.0/0
`, 17, ""},
		{"set match after bypass", `Chain CNB-EGRESS (1 references)
    pkts      bytes target     prot opt in     out     source               destination
     900    90000 RETURN     all  --  *      *       0.0.0.0/0            0.0.0.0/0            ctstate RELATED,ESTABLISHED
       3      180 DROP       all  --  *      *       0.0.0.0/0            0.0.0.0/0            match-set cnb-egress dst
`, 3, ""},
		{"empty chain", "Chain CNB-EGRESS-DROP (0 references)\n    pkts      bytes target     prot opt in     out     source               destination\n", 0, "no DROP rule"},
		{"garbage counter", "    x 1 DROP all\n", 0, "parse packet counter"},
		{"empty", "", 0, "no DROP rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDropCounter(tc.out)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestParseIPSetMemory(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      int64
		err       string
	}{
		{"ipset 7.17", `Name: cnb-egress
Type: hash:net
Revision: 7
Header: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x5f3c2d1e
Size in memory: 1496
References: 1
Number of entries: 10
`, 1496, ""},
		{"missing", "Name: x\nType: hash:net\n", 0, "no \"Size in memory:\""},
		{"negative", "Size in memory: -5\n", 0, "not a byte count"},
		{"not a number", "Size in memory: lots\n", 0, "not a byte count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIPSetMemory(tc.out)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func FuzzParseIPSetMemory(f *testing.F) {
	f.Add("Name: cnb-egress\nSize in memory: 1496\nReferences: 1\n")
	f.Add("Size in memory:\n")
	f.Add("Size in memory: 99999999999999999999999\n")
	f.Fuzz(func(t *testing.T, out string) {
		n, err := parseIPSetMemory(out)
		if err == nil && n < 0 {
			t.Fatalf("negative size %d without an error", n)
		}
		if err != nil && strings.Contains(err.Error(), "\n") && !strings.Contains(out, "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}

func FuzzParseDropCounter(f *testing.F) {
	f.Add("Chain X (1 references)\n pkts bytes target\n 5 300 DROP all -- * * 0.0.0.0/0 0.0.0.0/0\n")
	f.Add("1 2 DROP")
	f.Fuzz(func(t *testing.T, out string) {
		_, _ = parseDropCounter(out) // must not panic
	})
}

func TestLineBuffer(t *testing.T) {
	var b lineBuffer
	b.Write("*filter")
	b.Write("-A", "CNB-EGRESS", "-d", "240.0.0.0/24", "-j", "DROP")
	b.Write()
	if got, want := string(b.Bytes()), "*filter\n-A CNB-EGRESS -d 240.0.0.0/24 -j DROP\n\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if b.Lines() != 3 {
		t.Fatalf("Lines %d, want 3", b.Lines())
	}
}

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

func TestParseVmHWM(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"Name:\tipset\nVmPeak:\t  9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 2000 kB\n", 2048 * 1024, true},
		{"Name:\tzombie\nState:\tZ (zombie)\n", 0, false},
		{"VmHWM:\t x kB\n", 0, false},
	} {
		got, ok := parseVmHWM(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseVmHWM(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
