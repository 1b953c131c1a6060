package nslb

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"unsafe"
)

func TestLBEntries(t *testing.T) {
	ap := netip.MustParseAddrPort
	node := netip.MustParseAddr("198.18.67.11")
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	b := []Backend{
		{Addr: ap("198.19.1.10:80"), Node: node, NodeMAC: mac},
		{Addr: ap("198.19.2.10:80"), Node: netip.MustParseAddr("198.18.67.12"), NodeMAC: mac},
	}
	l, err := lbEntries([]Service{
		{VIP: ap("198.18.68.1:80"), Proto: TCP, Backends: b},
		{VIP: ap("198.18.68.1:80"), Proto: UDP, Backends: b[1:]},
		{VIP: ap("198.18.68.2:80"), Proto: TCP},
	}, 13, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.keys) != 3 || len(l.table) != 3*13 || len(l.backends) != 2 {
		t.Fatalf("%d services, %d slots, %d backends", len(l.keys), len(l.table), len(l.backends))
	}
	share := map[uint32]int{}
	for _, id := range l.table[:13] {
		share[id]++
	}
	if len(share) != 2 {
		t.Errorf("first service's table uses %v, want both backends", share)
	}
	if l.backends[0].NodeMAC != [6]byte(mac) || l.backends[0].Node == 0 {
		t.Errorf("backend value %+v lacks its worker", l.backends[0])
	}
	bad := func(mod func(*Backend)) []Service {
		x := b[0]
		mod(&x)
		return []Service{{VIP: ap("198.18.68.1:80"), Proto: TCP, Backends: []Backend{x}}}
	}
	for _, tc := range []struct {
		name   string
		s      []Service
		tunnel bool
		want   string
	}{
		{"IPv6 VIP", []Service{{VIP: ap("[fd00::1]:80"), Proto: TCP}}, false, "IPv4 VIP"},
		{"no proto", []Service{{VIP: ap("198.18.68.1:80")}}, false, "TCP or UDP"},
		{"twice", []Service{{VIP: ap("198.18.68.1:80"), Proto: TCP}, {VIP: ap("198.18.68.1:80"), Proto: TCP}}, false, "listed twice"},
		{"backend port 0", bad(func(x *Backend) { x.Addr = ap("198.19.1.10:0") }), false, "backend"},
		{"IPv6 worker", bad(func(x *Backend) { x.Node = netip.MustParseAddr("fd00::1") }), false, "worker address"},
		{"no MAC with tunnel", bad(func(x *Backend) { x.NodeMAC = nil }), true, "6-byte"},
		{"backend twice", []Service{{VIP: ap("198.18.68.1:80"), Proto: TCP, Backends: []Backend{b[0], b[0]}}}, false, "listed twice"},
		{"backend on two workers", []Service{
			{VIP: ap("198.18.68.1:80"), Proto: TCP, Backends: b[:1]},
			{VIP: ap("198.18.68.1:81"), Proto: TCP, Backends: []Backend{{Addr: b[0].Addr, Node: b[1].Node}}},
		}, false, "two workers"},
	} {
		if _, err := lbEntries(tc.s, 13, tc.tunnel); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := lbEntries(nil, 12, false); err != nil {
		t.Errorf("no services, non-prime size: %v (the size only matters with backends)", err)
	}
	if _, err := lbEntries([]Service{{VIP: ap("198.18.68.1:80"), Proto: TCP, Backends: b}}, 12, false); err == nil {
		t.Error("non-prime Maglev size accepted")
	}
}

func TestLBConfigValidate(t *testing.T) {
	ok := LBConfig{ExtIfindex: 2, SNATAddr: netip.MustParseAddr("198.18.67.1")}
	if err := ok.validate(); err != nil || ok.MaglevSize != DefaultMaglevSize {
		t.Fatalf("valid config: %v, size %d", err, ok.MaglevSize)
	}
	dsr := LBConfig{ExtIfindex: 2, DSR: true}
	if err := dsr.validate(); err != nil {
		t.Errorf("dsr needs no SNAT address: %v", err)
	}
	for _, tc := range []struct {
		name string
		c    LBConfig
		want string
	}{
		{"no interface", LBConfig{SNATAddr: ok.SNATAddr}, "interface index"},
		{"snat without address", LBConfig{ExtIfindex: 2}, "SNAT address"},
		{"snat with IPv6 address", LBConfig{ExtIfindex: 2, SNATAddr: netip.MustParseAddr("fd00::1")}, "SNAT address"},
		{"tunnel without MAC", LBConfig{ExtIfindex: 2, DSR: true, Tunnel: &Tunnel{Ifindex: 3, VNI: 42}}, "6-byte MAC"},
		{"VNI too big", LBConfig{ExtIfindex: 2, DSR: true, Tunnel: &Tunnel{Ifindex: 3, VNI: 1 << 24, MAC: make([]byte, 6)}}, "24-bit VNI"},
		{"IPv6 allow", LBConfig{ExtIfindex: 2, DSR: true, Allow: []netip.Prefix{netip.MustParsePrefix("fd00::/8")}}, "not IPv4"},
		{"too many allowed", LBConfig{ExtIfindex: 2, DSR: true, Allow: make([]netip.Prefix, MaxAllow+1)}, "at most"},
	} {
		if err := tc.c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestWorkerEntries(t *testing.T) {
	ap := netip.MustParseAddrPort
	keys, vals, err := workerEntries([]LocalService{
		{VIP: ap("198.18.68.1:80"), Proto: TCP, Backend: ap("198.19.1.10:80")},
		{VIP: ap("198.18.68.1:80"), Proto: UDP, Backend: ap("198.19.1.10:8080")},
	})
	if err != nil || len(keys) != 2 || len(vals) != 2 {
		t.Fatalf("%d keys, %d values: %v", len(keys), len(vals), err)
	}
	_, _, err = workerEntries([]LocalService{
		{VIP: ap("198.18.68.1:80"), Proto: TCP, Backend: ap("198.19.1.10:80")},
		{VIP: ap("198.18.68.1:80"), Proto: TCP, Backend: ap("198.19.1.11:80")},
	})
	if err == nil || !strings.Contains(err.Error(), "one local backend") {
		t.Errorf("two local backends of a service: %v", err)
	}
	if _, _, err := workerEntries([]LocalService{{VIP: ap("198.18.68.1:80"), Proto: TCP}}); err == nil {
		t.Error("service without a backend accepted")
	}
}

func TestAllowKeys(t *testing.T) {
	k, err := allowKeys([]netip.Prefix{netip.MustParsePrefix("198.18.64.77/24")})
	if err != nil || len(k) != 1 || k[0].Prefixlen != 24 {
		t.Fatalf("%+v, %v", k, err)
	}
	// The address is masked: the trie matches by prefix only, but a key
	// with host bits set would be a different entry for updates.
	b := (*[4]byte)(unsafe.Pointer(&k[0].Addr))
	if *b != [4]byte{198, 18, 64, 0} {
		t.Errorf("key address bytes %v, want 198.18.64.0", *b)
	}
}

// TestLayoutsMatchBPF: the Go mirrors have the C structs' sizes (the
// generated types are the authority; compare on what is common to every
// platform: the sizes written in the C files).
func TestLayoutsMatchBPF(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"svc_key", unsafe.Sizeof(svcKey{}), 8},
		{"svc_val", unsafe.Sizeof(svcVal{}), 8},
		{"backend", unsafe.Sizeof(backendVal{}), 20},
		{"local_be", unsafe.Sizeof(localBe{}), 8},
		{"lpm_key", unsafe.Sizeof(lpmKey{}), 8},
		{"settings", unsafe.Sizeof(settingsVal{}), 12},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: Go size %d, C size %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestFlowHashSpread: the flow hash with the Maglev table spreads a
// client's flows over both backends about evenly, and is a function of
// the 5-tuple only.
func TestFlowHashSpread(t *testing.T) {
	ap := netip.MustParseAddrPort
	svc := Service{VIP: ap("198.18.68.1:80"), Proto: TCP, Backends: []Backend{
		{Addr: ap("198.19.1.10:80"), Node: netip.MustParseAddr("198.18.67.11")},
		{Addr: ap("198.19.2.10:80"), Node: netip.MustParseAddr("198.18.67.12")},
	}}
	n := map[netip.AddrPort]int{}
	for p := range 2000 {
		src := netip.AddrPortFrom(netip.MustParseAddr("198.18.64.10"), uint16(32768+p))
		b, err := BackendOf(svc, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		n[b]++
		if FlowHash(src, svc.VIP, TCP) != FlowHash(src, svc.VIP, TCP) || FlowHash(src, svc.VIP, TCP) == FlowHash(src, svc.VIP, UDP) {
			t.Fatal("hash not a function of the 5-tuple")
		}
	}
	for b, c := range n {
		if c < 800 || c > 1200 {
			t.Errorf("backend %v got %d of 2000 flows", b, c)
		}
	}
}
