package socklb

import (
	"net/netip"
	"strings"
	"testing"
)

func TestEntries(t *testing.T) {
	ap := netip.MustParseAddrPort
	keys, vals, bes, err := entries([]Service{
		{VIP: ap("198.19.0.10:80"), Backends: []netip.AddrPort{ap("198.18.1.2:8080"), ap("198.18.2.2:8080")}},
		{VIP: ap("198.19.0.11:80"), Backends: []netip.AddrPort{ap("198.18.2.2:8080")}}, // shares a backend
		{VIP: ap("198.19.0.12:80")}, // no backends
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6 || len(vals) != 6 {
		t.Fatalf("%d keys, %d values; want 3 services + 3 slots", len(keys), len(vals))
	}
	if len(bes) != 2 {
		t.Errorf("%d backends, want the shared one once", len(bes))
	}
	if vals[0].Count != 2 || keys[0].Slot != 0 || keys[1].Slot != 1 || keys[2].Slot != 2 || vals[2].Backend != 1 {
		t.Errorf("first service laid out as %+v / %+v", keys[:3], vals[:3])
	}
	if vals[4].Backend != 1 || vals[5].Count != 0 {
		t.Errorf("second and third services: %+v", vals[3:])
	}
	for _, tc := range []struct {
		name string
		s    []Service
		want string
	}{
		{"IPv6 VIP", []Service{{VIP: ap("[fd00::1]:80")}}, "IPv4 VIP"},
		{"no port", []Service{{VIP: netip.AddrPortFrom(netip.MustParseAddr("198.19.0.1"), 0)}}, "IPv4 VIP"},
		{"twice", []Service{{VIP: ap("198.19.0.1:80")}, {VIP: ap("198.19.0.1:80")}}, "listed twice"},
		{"bad backend", []Service{{VIP: ap("198.19.0.1:80"), Backends: []netip.AddrPort{ap("0.0.0.0:80")}}}, "backend 0.0.0.0:80"},
		{"too many", []Service{{VIP: ap("198.19.0.1:80"), Backends: make([]netip.AddrPort, MaxBackends+1)}}, "at most 64"},
	} {
		if _, _, _, err := entries(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
