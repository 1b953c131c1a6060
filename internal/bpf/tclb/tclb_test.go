package tclb

import (
	"net/netip"
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
	} {
		if _, err := entries(tc.s, tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
