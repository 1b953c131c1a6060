package filter

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	must := netip.MustParseAddr("240.100.7.9")
	for _, tc := range []struct {
		name string
		seed uint64
		n    int
		must netip.Addr
	}{
		{"one", 1, 1, must},
		{"ten", 1, 10, must},
		{"thousand", 2, 1000, must},
		{"above 4096 slots", 3, 5000, must},
		{"100k", 4, 100_000, must},
		{"must at range start", 5, 300, netip.MustParseAddr("240.0.0.0")},
		{"must near range end", 6, 300, netip.MustParseAddr("255.254.255.255")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Generate(tc.seed, tc.n, tc.must)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.n {
				t.Fatalf("got %d prefixes, want %d", len(got), tc.n)
			}
			containing := 0
			lens := map[int]int{}
			var prevNext uint64
			for i, p := range got {
				if !p.IsValid() || p != p.Masked() || !p.Addr().Is4() {
					t.Fatalf("prefix %d %s is not a masked IPv4 prefix", i, p)
				}
				if !DenyRange.Contains(p.Addr()) || p.Bits() < DenyRange.Bits() {
					t.Fatalf("prefix %d %s is outside %s", i, p, DenyRange)
				}
				first, next := prefixRange(p)
				if next == 0 {
					t.Fatalf("prefix %d %s ends at 255.255.255.255", i, p)
				}
				if i > 0 && uint64(first) < prevNext {
					t.Fatalf("prefix %d %s overlaps or is out of order after %s", i, p, got[i-1])
				}
				prevNext = uint64(next)
				if p.Contains(tc.must) {
					containing++
				}
				lens[p.Bits()]++
			}
			if containing != 1 {
				t.Fatalf("%d prefixes contain %s, want exactly 1", containing, tc.must)
			}
			if tc.n >= 1000 && len(lens) < 5 {
				t.Errorf("only %d distinct prefix lengths in %d prefixes: %v", len(lens), tc.n, lens)
			}
			again, err := Generate(tc.seed, tc.n, tc.must)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, again) {
				t.Fatal("same seed gave a different list")
			}
			if tc.n >= 10 {
				other, err := Generate(tc.seed+100, tc.n, tc.must)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Equal(got, other) {
					t.Fatal("different seeds gave the same list")
				}
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	good := netip.MustParseAddr("240.1.2.3")
	for _, tc := range []struct {
		name string
		n    int
		must netip.Addr
		want string
	}{
		{"zero", 0, good, "n 0"},
		{"negative", -5, good, "n -5"},
		{"too many", 1 << 28, good, "n 268435456"},
		{"must outside", 10, netip.MustParseAddr("198.18.0.1"), "must 198.18.0.1"},
		{"must ipv6", 10, netip.MustParseAddr("2001:db8::1"), "must 2001:db8::1"},
		{"must invalid", 10, netip.Addr{}, "must invalid IP"},
		{"must in last slot", 10, netip.MustParseAddr("255.255.255.255"), "last /16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(1, tc.n, tc.must)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkGenerate: go test -run '^$' -bench Generate -benchmem ./internal/scenario/egress/
func BenchmarkGenerate(b *testing.B) {
	must := netip.MustParseAddr("240.100.7.9")
	for _, n := range []struct {
		name string
		n    int
	}{{"1k", 1000}, {"1M", 1_000_000}, {"10M", 10_000_000}} {
		b.Run(n.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Generate(uint64(b.N), n.n, must); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
