package tclb

import (
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestEntries(t *testing.T) {
	ap := netip.MustParseAddrPort
	b := []netip.AddrPort{ap("198.18.1.2:8080"), ap("198.18.2.2:8080"), ap("198.18.1.3:8080")}
	l, err := entries([]Service{
		{VIP: ap("198.19.0.10:80"), Proto: TCP, Backends: b},
		{VIP: ap("198.19.0.10:80"), Proto: UDP, Backends: b[1:2]}, // same VIP, other protocol
		{VIP: ap("198.19.0.11:80"), Proto: TCP},                   // no backends
	}, 13)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.keys) != 3 || len(l.table) != 3*13 || len(l.backends) != 3 {
		t.Fatalf("%d services, %d table slots, %d backends", len(l.keys), len(l.table), len(l.backends))
	}
	share := map[uint32]int{}
	for _, id := range l.table[:13] {
		share[id]++
	}
	if len(share) != 3 {
		t.Errorf("first service's table uses backends %v, want all three", share)
	}
	for _, id := range l.table[13:26] {
		if l.backends[id] != l.backends[l.table[13]] {
			t.Fatal("one-backend service: table not all that backend")
		}
	}
	if l.vals[2].Count != 0 || l.vals[1].ID != 1 {
		t.Errorf("values %+v", l.vals)
	}
	for _, tc := range []struct {
		name string
		s    []Service
		m    int
		want string
	}{
		{"IPv6", []Service{{VIP: ap("[fd00::1]:80"), Proto: TCP}}, 13, "IPv4 VIP"},
		{"no proto", []Service{{VIP: ap("198.19.0.1:80")}}, 13, "TCP or UDP"},
		{"twice", []Service{{VIP: ap("198.19.0.1:80"), Proto: TCP}, {VIP: ap("198.19.0.1:80"), Proto: TCP}}, 13, "listed twice"},
		{"bad backend", []Service{{VIP: ap("198.19.0.1:80"), Proto: TCP, Backends: []netip.AddrPort{ap("198.18.1.1:0")}}}, 13, "backend"},
		{"table too small", []Service{{VIP: ap("198.19.0.1:80"), Proto: TCP, Backends: b}}, 2, "prime"},
		{"m not prime", []Service{{VIP: ap("198.19.0.1:80"), Proto: TCP, Backends: b}}, 12, "prime"},
		{"m < 2", nil, 1, "prime"},
		{"hairpin VIP", []Service{{VIP: netip.AddrPortFrom(HairpinAddr, 80), Proto: TCP}}, 13, "hairpin"},
		{"hairpin backend", []Service{{VIP: ap("198.19.0.1:80"), Proto: TCP, Backends: []netip.AddrPort{netip.AddrPortFrom(HairpinAddr, 80)}}}, 13, "hairpin"},
	} {
		if _, err := entries(tc.s, tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCountersMatchC checks that the Go counter indexes are tclb.c's enum
// counter_idx, and that countersFrom names each index.
func TestCountersMatchC(t *testing.T) {
	src, err := os.ReadFile("tclb.c")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"NEW": cntNew, "FWD": cntForward, "REV": cntReverse,
		"NO_BACKEND": cntNoBackend, "HAIRPIN": cntHairpin, "MAX": cntMax,
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\s*CNT_(\w+) = (\d+),`).FindAllStringSubmatch(string(src), -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(got) != len(want) {
		t.Errorf("tclb.c counters %v, Go knows %v", got, want)
	}
	for name, i := range want {
		if g, ok := got[name]; !ok || g != i {
			t.Errorf("CNT_%s: tclb.c %d (present %v), Go %d", name, g, ok, i)
		}
	}
	c := countersFrom([]uint64{1, 2, 3, 4, 5})
	if c != (Counters{New: 1, Forward: 2, Reverse: 3, NoBackend: 4, Hairpin: 5}) {
		t.Errorf("countersFrom: %+v", c)
	}
}

// TestHairpinAddrMatchesC: the loader sets hairpin_addr from HairpinAddr,
// but the object's default should say the same.
func TestHairpinAddrMatchesC(t *testing.T) {
	src, err := os.ReadFile("tclb.c")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`hairpin_addr = bpf_htonl\(0x([0-9a-f]{8})\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("tclb.c: no hairpin_addr default")
	}
	v, _ := strconv.ParseUint(string(m[1]), 16, 32)
	if got := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}); got != HairpinAddr {
		t.Errorf("tclb.c hairpin_addr %v, HairpinAddr %v", got, HairpinAddr)
	}
	if !HairpinAddr.IsLinkLocalUnicast() {
		t.Errorf("HairpinAddr %v: want a link-local address, which no pod or service uses", HairpinAddr)
	}
}
