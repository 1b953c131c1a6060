package nf

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
			got, err := ParseDropCounter(tc.out)
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
			got, err := ParseIPSetMemory(tc.out)
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
		n, err := ParseIPSetMemory(out)
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
		_, _ = ParseDropCounter(out) // must not panic
	})
}
