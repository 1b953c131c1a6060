//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package tclb

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// tclbLab is a "pod" namespace with veth p0 (198.18.0.1) and a "node"
// namespace with its peer n0 (198.18.0.2) and backends on its loopback.
// The pod routes the VIP range to the node; nothing in the node owns a VIP
// and no netfilter rule exists, so a pod reaches a backend through a VIP
// only by the programs' DNAT, and hears back only by their reverse NAT.
type tclbLab struct {
	pod, node func(func() error) error
	nodeNS    netns.NsHandle
}

func newTCLBLab(t *testing.T, backends []string) *tclbLab {
	t.Helper()
	pod, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pod.Close() })
	node, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	hp, err := netlink.NewHandleAt(netns.NsHandle(pod))
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Close()
	hn, err := netlink.NewHandleAt(netns.NsHandle(node))
	if err != nil {
		t.Fatal(err)
	}
	defer hn.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(hp.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "p0"}, PeerName: "n0", PeerNamespace: netlink.NsFd(node)}))
	p0, err := hp.LinkByName("p0")
	must(err)
	n0, err := hn.LinkByName("n0")
	must(err)
	lo, err := hn.LinkByName("lo")
	must(err)
	must(hp.AddrAdd(p0, &netlink.Addr{IPNet: mustNet("198.18.0.1/24")}))
	must(hn.AddrAdd(n0, &netlink.Addr{IPNet: mustNet("198.18.0.2/24")}))
	for _, l := range []netlink.Link{p0} {
		must(hp.LinkSetUp(l))
	}
	for _, l := range []netlink.Link{n0, lo} {
		must(hn.LinkSetUp(l))
	}
	for _, b := range backends {
		must(hn.AddrAdd(lo, &netlink.Addr{IPNet: mustNet(b + "/32")}))
	}
	must(hp.RouteAdd(&netlink.Route{LinkIndex: p0.Attrs().Index, Dst: mustNet("198.19.0.0/16"), Gw: net.ParseIP("198.18.0.2")}))
	return &tclbLab{
		pod:    func(f func() error) error { return nsrun.Do(netns.NsHandle(pod), f) },
		node:   func(f func() error) error { return nsrun.Do(netns.NsHandle(node), f) },
		nodeNS: netns.NsHandle(node),
	}
}

func mustNet(s string) *net.IPNet {
	p := netip.MustParsePrefix(s)
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

// TestTCLB connects 40 times over TCP and exchanges UDP datagrams through
// a VIP with two backends: every exchange works (checksums and reverse NAT
// right), the pod only ever sees the VIP as its peer, both backends get
// flows, a service without backends drops, and with the programs detached
// the VIP is unreachable (negative control).
func TestTCLB(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	lab := newTCLBLab(t, []string{"198.18.1.2", "198.18.2.2"})
	var backends []netip.AddrPort
	served := newServedCount()
	for _, a := range []string{"198.18.1.2", "198.18.2.2"} {
		backends = append(backends, startEchoBoth(t, lab.node, netip.AddrPortFrom(netip.MustParseAddr(a), 0), served))
	}
	// The service maps the VIP's port to each backend's own (kernel-chosen)
	// port; UDP goes to the VIP's port 53 and the first backend.
	vip := netip.MustParseAddrPort("198.19.0.10:80")
	empty := netip.MustParseAddrPort("198.19.0.11:80")
	svcs := []Service{
		{VIP: vip, Proto: TCP, Backends: backends},
		{VIP: empty, Proto: TCP},
		{VIP: netip.AddrPortFrom(vip.Addr(), 53), Proto: UDP, Backends: backends[:1]},
	}
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	lb, err := Load(svcs, 0)
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if err := lb.Attach(lab.node, "n0"); err != nil {
		testutil.SkipIfNotSupported(t, err, ErrNotSupported)
		t.Fatal(err)
	}
	for i := range 40 {
		if err := exchangeTCP(lab.pod, vip, "x"); err != nil {
			t.Fatalf("TCP exchange %d: %v", i, err)
		}
	}
	if served.get(backends[0].Addr()) == 0 || served.get(backends[1].Addr()) == 0 {
		t.Errorf("connections per backend %v: want both used", served.n)
	}
	// UDP through the VIP's port 53: the reply's source is the VIP.
	if err := exchangeUDP(lab.pod, netip.AddrPortFrom(vip.Addr(), 53), "y"); err != nil {
		t.Error(err)
	}
	// A service without backends drops (the connect times out).
	if reachable(lab.pod, empty) {
		t.Error("connected to a service without backends")
	}
	c, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counters %+v, connections per backend %v", c, served.n)
	if c.New < 41 || c.Forward < 40 || c.Reverse < 80 || c.NoBackend == 0 {
		t.Errorf("counters %+v: want >= 41 new flows, >= 40 forwarded packets, >= 80 reversed, some no-backend drops", c)
	}
	// No conntrack: nothing in the node namespace engaged it.
	var ct []byte
	_ = lab.node(func() error {
		ct, _ = os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_count")
		return nil
	})
	if n := strings.TrimSpace(string(ct)); n != "" && n != "0" {
		t.Errorf("node namespace conntrack count %s, want 0", n)
	}
	// Flush empties both connection maps: at least one entry per flow
	// above in each, none left.
	if n, err := lb.Flush(); err != nil || n < 2*41 {
		t.Errorf("Flush removed %d entries (%v), want >= %d", n, err, 2*41)
	}
	if n, err := lb.Flush(); err != nil || n != 0 {
		t.Errorf("second Flush removed %d entries (%v), want 0", n, err)
	}
	// Negative control: detached, the VIP leads nowhere.
	if err := lb.Detach(); err != nil {
		t.Fatal(err)
	}
	if reachable(lab.pod, vip) {
		t.Error("reached the VIP with the programs detached")
	}
}

// exchangeTCP connects from inside do to vip, sends msg and reads it
// echoed back; the connection's peer must be vip.
func exchangeTCP(do func(func() error) error, vip netip.AddrPort, msg string) error {
	var c net.Conn
	err := do(func() (err error) {
		c, err = net.DialTimeout("tcp4", vip.String(), 2*time.Second)
		return err
	})
	if err != nil {
		return fmt.Errorf("TCP to %v: %w", vip, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if peer := c.RemoteAddr().String(); peer != vip.String() {
		return fmt.Errorf("TCP to %v: peer %s", vip, peer)
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("TCP to %v: %w", vip, err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("TCP to %v: read the echo: %w", vip, err)
	}
	if string(got) != msg {
		return fmt.Errorf("TCP to %v: echo %q, want %q", vip, got, msg)
	}
	return nil
}

// exchangeUDP sends msg from inside do to vip and reads the echo, which
// must come from vip.
func exchangeUDP(do func(func() error) error, vip netip.AddrPort, msg string) error {
	var u *net.UDPConn
	if err := do(func() (err error) {
		u, err = net.ListenUDP("udp4", nil)
		return err
	}); err != nil {
		return fmt.Errorf("UDP to %v: %w", vip, err)
	}
	defer u.Close()
	_ = u.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := u.WriteToUDPAddrPort([]byte(msg), vip); err != nil {
		return fmt.Errorf("UDP to %v: %w", vip, err)
	}
	b := make([]byte, 64)
	n, from, err := u.ReadFromUDPAddrPort(b)
	if err != nil {
		return fmt.Errorf("UDP to %v: %w", vip, err)
	}
	if from != vip || string(b[:n]) != msg {
		return fmt.Errorf("UDP to %v: reply %q from %v, want %q from the VIP", vip, b[:n], from, msg)
	}
	return nil
}

// reachable reports whether a TCP connect from inside do to to succeeds
// within 300 ms.
func reachable(do func(func() error) error, to netip.AddrPort) bool {
	err := do(func() error {
		c, err := net.DialTimeout("tcp4", to.String(), 300*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	return err == nil
}

// startEchoBoth starts a TCP and a UDP echo on the same port of at (port
// 0: one the kernel picks) in the namespace, counting TCP connections per
// listening address and per peer address in served.
func startEchoBoth(t *testing.T, do func(func() error) error, at netip.AddrPort, served *servedCount) netip.AddrPort {
	t.Helper()
	ip := at.Addr()
	var ln net.Listener
	var uc *net.UDPConn
	if err := do(func() (err error) {
		if ln, err = net.Listen("tcp4", at.String()); err != nil {
			return err
		}
		at := netip.MustParseAddrPort(ln.Addr().String())
		uc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(at))
		return err
	}); err != nil {
		t.Fatalf("listen on %v: %v", at, err)
	}
	at = netip.MustParseAddrPort(ln.Addr().String())
	done := make(chan struct{}, 2)
	t.Cleanup(func() {
		ln.Close()
		uc.Close()
		<-done
		<-done
	})
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served.add(ip, netip.MustParseAddrPort(c.RemoteAddr().String()).Addr())
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 64)
				if n, err := c.Read(b); err == nil {
					_, _ = c.Write(b[:n])
				}
			}()
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		b := make([]byte, 64)
		for {
			n, from, err := uc.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			_, _ = uc.WriteToUDPAddrPort(b[:n], from)
		}
	}()
	return at
}

// servedCount counts TCP connections per backend address (n) and per
// peer address (peers).
type servedCount struct {
	mu    sync.Mutex
	n     map[netip.Addr]int
	peers map[netip.Addr]int
}

func newServedCount() *servedCount {
	return &servedCount{n: map[netip.Addr]int{}, peers: map[netip.Addr]int{}}
}

func (s *servedCount) add(a, peer netip.Addr) {
	s.mu.Lock()
	s.n[a]++
	s.peers[peer]++
	s.mu.Unlock()
}

// peerCounts returns a copy of the per-peer counts.
func (s *servedCount) peerCounts() map[netip.Addr]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.peers)
}

func (s *servedCount) get(a netip.Addr) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[a]
}

// TestProbe: Probe reports this machine able, or why not, and leaves
// nothing behind (its load is closed, its namespace scratch).
func TestProbe(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	err := Probe()
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
}
