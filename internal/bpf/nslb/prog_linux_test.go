//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nslb

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/cnibench/cnibench/internal/testutil"
)

// The programs' packet logic, run with BPF_PROG_TEST_RUN on hand-made
// frames: no namespace, no device. The redirect helpers only record where
// the packet would go there, so the verdicts are TC_ACT_REDIRECT (7); what
// is checked is the frame that comes out (addresses, ports, both
// checksums) and the counters.

const (
	actShot     = 2
	actRedirect = 7
	actNext     = 0xffffffff // TCX_NEXT (-1)
)

var (
	ap       = netip.MustParseAddrPort
	vip      = ap("198.18.68.1:80")
	lbAddr   = netip.MustParseAddr("198.18.67.1")
	be1      = Backend{Addr: ap("198.19.1.10:80"), Node: netip.MustParseAddr("198.18.67.11"), NodeMAC: net.HardwareAddr{2, 0xcb, 0, 0, 0, 0x0b}}
	be2      = Backend{Addr: ap("198.19.2.10:80"), Node: netip.MustParseAddr("198.18.67.12"), NodeMAC: net.HardwareAddr{2, 0xcb, 0, 0, 0, 0x0c}}
	tunMAC   = net.HardwareAddr{2, 0xcb, 0, 0, 0, 1}
	allowNet = netip.MustParsePrefix("198.18.64.0/24")
)

// frame builds Ethernet+IPv4+TCP/UDP with valid checksums (udpZero: a UDP
// checksum of 0, "none").
func frame(proto Proto, src, dst netip.AddrPort, payload []byte, udpZero bool) []byte {
	l4len := 20
	if proto == UDP {
		l4len = 8
	}
	b := make([]byte, 14+20+l4len+len(payload))
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 0xaa})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 0xbb})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+l4len+len(payload)))
	ip[8] = 64
	ip[9] = byte(proto)
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:], csum(ip, 0))
	l4 := b[34:]
	binary.BigEndian.PutUint16(l4[0:], src.Port())
	binary.BigEndian.PutUint16(l4[2:], dst.Port())
	if proto == TCP {
		l4[12] = 5 << 4
		l4[13] = 0x02 // SYN
		binary.BigEndian.PutUint16(l4[14:], 65535)
	} else {
		binary.BigEndian.PutUint16(l4[4:], uint16(8+len(payload)))
	}
	copy(l4[l4len:], payload)
	if proto == UDP && udpZero {
		return b
	}
	off := 16
	if proto == UDP {
		off = 6
	}
	binary.BigEndian.PutUint16(l4[off:], csum(l4, pseudo(ip, len(l4))))
	return b
}

// pseudo is the sum of the IPv4 pseudo header.
func pseudo(ip []byte, l4len int) uint32 {
	var s uint32
	for i := 12; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	return s + uint32(ip[9]) + uint32(l4len)
}

func csum(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// parsed is what came out of a program.
type parsed struct {
	dmac, smac net.HardwareAddr
	src, dst   netip.AddrPort
	l4csum     uint16
}

// parseFrame checks both checksums of b and returns its addresses.
func parseFrame(t *testing.T, b []byte) parsed {
	t.Helper()
	ip := b[14:34]
	if csum(ip, 0) != 0 {
		t.Errorf("bad IPv4 header checksum in % x", ip)
	}
	l4 := b[34:]
	off := 16
	if ip[9] == byte(UDP) {
		off = 6
	}
	p := parsed{
		dmac: net.HardwareAddr(b[0:6]), smac: net.HardwareAddr(b[6:12]),
		src:    netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(l4[0:])),
		dst:    netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(l4[2:])),
		l4csum: binary.BigEndian.Uint16(l4[off:]),
	}
	if !(ip[9] == byte(UDP) && p.l4csum == 0) && csum(l4, pseudo(ip, len(l4))) != 0 {
		t.Errorf("bad L4 checksum in %v -> %v", p.src, p.dst)
	}
	return p
}

func run(t *testing.T, prog *ebpf.Program, in []byte) (uint32, []byte) {
	t.Helper()
	out := make([]byte, len(in)+256)
	ret, err := prog.Run(&ebpf.RunOptions{Data: in, DataOut: out})
	if err != nil {
		t.Fatalf("test run: %v", err)
	}
	return ret, out[:len(in)]
}

func loadLB(t *testing.T, cfg LBConfig) *LB {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	lb, err := LoadLB(cfg)
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	t.Cleanup(func() { lb.Close() })
	return lb
}

func lbCounters(t *testing.T, lb *LB) LBCounters {
	t.Helper()
	c, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLBSNATProgram: 64 new flows get the backend Go predicts (same Maglev
// table and hash), both backends among them, source SNATed to the LB with
// the client's port; every reply is translated back to VIP -> client; both
// checksums stay valid; non-service packets pass; the firewall drops a
// refused source only while on.
func TestLBSNATProgram(t *testing.T) {
	svc := Service{VIP: vip, Proto: TCP, Backends: []Backend{be1, be2}}
	lb := loadLB(t, LBConfig{Services: []Service{svc}, ExtIfindex: 1, SNATAddr: lbAddr, Allow: []netip.Prefix{allowNet}})
	prog := lb.objs.LbIngress
	used := map[netip.AddrPort]int{}
	for i := range 64 {
		client := netip.AddrPortFrom(netip.MustParseAddr("198.18.64.10"), uint16(40000+i))
		ret, out := run(t, prog, frame(TCP, client, vip, []byte("hello"), false))
		if ret != actRedirect {
			t.Fatalf("flow %d: verdict %d, want redirect", i, ret)
		}
		p := parseFrame(t, out)
		want, err := BackendOf(svc, client, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.dst != want || p.src != netip.AddrPortFrom(lbAddr, client.Port()) {
			t.Fatalf("flow %d: %v -> %v, want %v -> %v", i, p.src, p.dst, netip.AddrPortFrom(lbAddr, client.Port()), want)
		}
		used[p.dst]++
		// The backend's reply comes back to the LB and leaves as VIP -> client.
		ret, out = run(t, prog, frame(TCP, p.dst, p.src, []byte("olleh"), false))
		if r := parseFrame(t, out); ret != actRedirect || r.src != vip || r.dst != client {
			t.Fatalf("flow %d reply: verdict %d, %v -> %v, want %v -> %v", i, ret, r.src, r.dst, vip, client)
		}
	}
	if len(used) != 2 {
		t.Errorf("backends used %v, want both", used)
	}
	if c := lbCounters(t, lb); c.New != 64 || c.Forward != 64 || c.Reverse != 64 || c.FirewallDrops != 0 {
		t.Errorf("counters %+v, want 64 new, forward and reverse", c)
	}
	other := frame(TCP, ap("198.18.64.10:40000"), ap("198.18.68.2:80"), nil, false)
	if ret, _ := run(t, prog, other); ret != actNext {
		t.Errorf("packet to no service: verdict %d, want TCX_NEXT", ret)
	}
	refused := frame(TCP, ap("198.18.65.10:40000"), vip, nil, false)
	if ret, _ := run(t, prog, refused); ret != actRedirect {
		t.Errorf("firewall off, refused source: verdict %d, want redirect", ret)
	}
	if err := lb.SetFirewall(true); err != nil {
		t.Fatal(err)
	}
	if ret, _ := run(t, prog, refused); ret != actShot {
		t.Errorf("firewall on, refused source: verdict %d, want drop", ret)
	}
	if ret, _ := run(t, prog, frame(TCP, ap("198.18.64.10:40001"), vip, nil, false)); ret != actRedirect {
		t.Errorf("firewall on, allowed source: verdict %d, want redirect", ret)
	}
	if c := lbCounters(t, lb); c.FirewallDrops != 1 {
		t.Errorf("firewall drops %d, want 1", c.FirewallDrops)
	}
}

// TestLBSNATPortClash: two clients with the same source port towards a
// one-backend service get different SNAT ports, and each reply finds its
// own client.
func TestLBSNATPortClash(t *testing.T) {
	lb := loadLB(t, LBConfig{Services: []Service{{VIP: vip, Proto: UDP, Backends: []Backend{be1}}}, ExtIfindex: 1, SNATAddr: lbAddr})
	prog := lb.objs.LbIngress
	clients := []netip.AddrPort{ap("198.18.64.10:5000"), ap("198.18.64.11:5000")}
	var snat []netip.AddrPort
	for _, c := range clients {
		ret, out := run(t, prog, frame(UDP, c, vip, []byte("x"), false))
		if ret != actRedirect {
			t.Fatalf("%v: verdict %d", c, ret)
		}
		snat = append(snat, parseFrame(t, out).src)
	}
	if snat[0] == snat[1] || snat[0].Port() != 5000 {
		t.Fatalf("SNAT sources %v: want the first client's port, then another", snat)
	}
	for i, s := range snat {
		_, out := run(t, prog, frame(UDP, be1.Addr, s, []byte("y"), true))
		if p := parseFrame(t, out); p.dst != clients[i] || p.src != vip || p.l4csum != 0 {
			t.Errorf("reply to %v: %v -> %v (checksum %#x), want %v -> %v with checksum 0", s, p.src, p.dst, p.l4csum, vip, clients[i])
		}
	}
}

// TestLBDSRProgram: in dsr the frame leaves unchanged at L3/L4 (the VIP
// stays the destination); with the tunnel its inner MACs are the worker's
// and the LB's VXLAN devices'; nothing addressed to the LB is "reversed".
func TestLBDSRProgram(t *testing.T) {
	svc := Service{VIP: vip, Proto: TCP, Backends: []Backend{be1, be2}}
	lb := loadLB(t, LBConfig{Services: []Service{svc}, DSR: true, ExtIfindex: 1, Tunnel: &Tunnel{Ifindex: 1, VNI: 42, MAC: tunMAC}})
	prog := lb.objs.LbIngress
	client := ap("198.18.64.10:40000")
	in := frame(TCP, client, vip, []byte("hello"), false)
	ret, out := run(t, prog, in)
	if ret != actRedirect || !bytes.Equal(out[12:], in[12:]) {
		t.Fatalf("verdict %d; L3 and above changed: % x", ret, out[14:40])
	}
	want, _ := BackendOf(svc, client, 0)
	wantMAC := be1.NodeMAC
	if want == be2.Addr {
		wantMAC = be2.NodeMAC
	}
	if p := parseFrame(t, out); !bytes.Equal(p.dmac, wantMAC) || !bytes.Equal(p.smac, tunMAC) {
		t.Errorf("inner MACs %v <- %v, want %v <- %v", p.dmac, p.smac, wantMAC, tunMAC)
	}
	if ret, _ := run(t, lb.objs.LbTunnelIngress, frame(TCP, want, client, nil, false)); ret != actNext {
		t.Errorf("tunnel program in dsr: verdict %d, want TCX_NEXT", ret)
	}
	if c := lbCounters(t, lb); c.Forward != 1 || c.Reverse != 0 {
		t.Errorf("counters %+v, want 1 forward, 0 reverse", c)
	}
}

// TestLBTunnelReverse: snat+vxlan replies arrive on the tunnel device,
// addressed to the LB's tunnel address, and are translated back there.
func TestLBTunnelReverse(t *testing.T) {
	tunAddr := netip.MustParseAddr("198.18.69.1")
	lb := loadLB(t, LBConfig{
		Services: []Service{{VIP: vip, Proto: TCP, Backends: []Backend{be2}}}, ExtIfindex: 1,
		SNATAddr: tunAddr, Tunnel: &Tunnel{Ifindex: 2, VNI: 42, MAC: tunMAC},
	})
	client := ap("198.18.64.10:40000")
	ret, out := run(t, lb.objs.LbIngress, frame(TCP, client, vip, nil, false))
	p := parseFrame(t, out)
	if ret != actRedirect || p.dst != be2.Addr || p.src != netip.AddrPortFrom(tunAddr, 40000) || !bytes.Equal(p.dmac, be2.NodeMAC) {
		t.Fatalf("verdict %d, %v -> %v (MAC %v)", ret, p.src, p.dst, p.dmac)
	}
	// On the external interface, a packet to the tunnel address is not a
	// reply (the tunnel brings them); on the tunnel device it is.
	reply := frame(TCP, be2.Addr, p.src, nil, false)
	if ret, _ := run(t, lb.objs.LbIngress, reply); ret != actNext {
		t.Errorf("reply on the external interface: verdict %d, want TCX_NEXT", ret)
	}
	ret, out = run(t, lb.objs.LbTunnelIngress, reply)
	if r := parseFrame(t, out); ret != actRedirect || r.src != vip || r.dst != client {
		t.Errorf("reply on the tunnel: verdict %d, %v -> %v", ret, r.src, r.dst)
	}
}

// TestWorkerProgram: the worker DNATs the VIP to its local backend,
// gives the backend's reply the VIP back, and its firewall drops a
// refused source.
func TestWorkerProgram(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	w, err := LoadWorker(WorkerConfig{
		Services: []LocalService{{VIP: vip, Proto: TCP, Backend: be1.Addr}, {VIP: ap("198.18.68.1:53"), Proto: UDP, Backend: ap("198.19.1.10:5353")}},
		Firewall: true, Allow: []netip.Prefix{allowNet},
	})
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	defer w.Close()
	in, back := w.objs.WorkerIngress, w.objs.WorkerFromPod
	client := ap("198.18.64.10:40000")
	ret, out := run(t, in, frame(TCP, client, vip, []byte("hi"), false))
	if p := parseFrame(t, out); ret != actNext || p.dst != be1.Addr || p.src != client {
		t.Fatalf("DNAT: verdict %d, %v -> %v", ret, p.src, p.dst)
	}
	ret, out = run(t, back, frame(TCP, be1.Addr, client, []byte("ih"), false))
	if p := parseFrame(t, out); ret != actNext || p.src != vip || p.dst != client {
		t.Fatalf("reverse: verdict %d, %v -> %v", ret, p.src, p.dst)
	}
	// UDP with port translation and a zero checksum.
	udpVIP := ap("198.18.68.1:53")
	_, out = run(t, in, frame(UDP, client, udpVIP, []byte("q"), true))
	if p := parseFrame(t, out); p.dst != ap("198.19.1.10:5353") || p.l4csum != 0 {
		t.Errorf("UDP DNAT: %v (checksum %#x)", p.dst, p.l4csum)
	}
	_, out = run(t, back, frame(UDP, ap("198.19.1.10:5353"), client, []byte("a"), false))
	if p := parseFrame(t, out); p.src != udpVIP {
		t.Errorf("UDP reverse: source %v, want %v", p.src, udpVIP)
	}
	if ret, _ := run(t, back, frame(TCP, be1.Addr, ap("198.18.64.99:1"), nil, false)); ret != actNext {
		t.Errorf("unknown pod flow: verdict %d", ret)
	}
	if ret, _ := run(t, in, frame(TCP, ap("198.18.65.10:40000"), vip, nil, false)); ret != actShot {
		t.Errorf("refused source: verdict %d, want drop", ret)
	}
	c, err := w.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.DNAT != 2 || c.RevNAT != 2 || c.FirewallDrops != 1 {
		t.Errorf("counters %+v, want 2 DNAT, 2 RevNAT, 1 firewall drop", c)
	}
}

func TestProbe(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
}
