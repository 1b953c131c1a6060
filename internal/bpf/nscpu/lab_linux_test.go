//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nscpu

// A three-namespace line for the privileged tests: A (198.18.200.1) —
// B (forwards) — C (198.18.200.6), plus an idle D. Anonymous namespaces
// (nsrun.NewScratch), no link to the host namespace; closing the handles
// when the test ends destroys them with their veths.

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/nsrun"
)

var (
	addrA  = netip.MustParseAddr("198.18.200.1")
	addrBA = netip.MustParseAddr("198.18.200.2")
	addrBC = netip.MustParseAddr("198.18.200.5")
	addrC  = netip.MustParseAddr("198.18.200.6")
)

type testNS struct {
	h   netns.NsHandle
	nl  *netlink.Handle
	ino uint64
}

func (n *testNS) do(f func() error) error { return nsrun.Do(n.h, f) }

func newTestNS(t testing.TB) *testNS {
	t.Helper()
	h, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close(); h.Close() })
	ino, err := NetnsInode(int(h))
	if err != nil {
		t.Fatal(err)
	}
	n := &testNS{h: h, nl: nl, ino: ino}
	n.up(t, "lo")
	return n
}

func (n *testNS) link(t testing.TB, name string) netlink.Link {
	t.Helper()
	l, err := n.nl.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return l
}

func (n *testNS) up(t testing.TB, name string) {
	t.Helper()
	if err := n.nl.LinkSetUp(n.link(t, name)); err != nil {
		t.Fatalf("set %s up: %v", name, err)
	}
}

func (n *testNS) addr(t testing.TB, dev string, a netip.Addr) {
	t.Helper()
	p := netip.PrefixFrom(a, 30)
	if err := n.nl.AddrAdd(n.link(t, dev), &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}); err != nil {
		t.Fatalf("add %s to %s: %v", p, dev, err)
	}
}

func (n *testNS) defaultVia(t testing.TB, dev string, gw netip.Addr) {
	t.Helper()
	if err := n.nl.RouteAdd(&netlink.Route{LinkIndex: n.link(t, dev).Attrs().Index, Gw: gw.AsSlice()}); err != nil {
		t.Fatalf("default route via %s: %v", gw, err)
	}
}

// veth joins n (device name) and peer (peerName).
func (n *testNS) veth(t testing.TB, name string, peer *testNS, peerName string) {
	t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peerName, PeerNamespace: netlink.NsFd(int(peer.h))}
	if err := n.nl.LinkAdd(v); err != nil {
		t.Fatalf("add veth %s/%s: %v", name, peerName, err)
	}
}

type line struct{ a, b, c, d *testNS }

// newLine builds A —a0/b0— B —b1/c0— C and an idle D. Only B forwards
// (ip_forward is per namespace and off in a new one). With bridge, b0 is
// a port of a bridge br0 in B that holds B's address on A's side, as a
// node's pod veths are in the lab's "switched" datapath: every packet
// from A is received twice in B, by b0 and then by br0.
func newLine(t testing.TB, bridge bool) *line {
	t.Helper()
	l := &line{a: newTestNS(t), b: newTestNS(t), c: newTestNS(t), d: newTestNS(t)}
	l.a.veth(t, "a0", l.b, "b0")
	l.b.veth(t, "b1", l.c, "c0")
	l.a.addr(t, "a0", addrA)
	if bridge {
		if err := l.b.nl.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}); err != nil {
			t.Skipf("B: add bridge: %v", err)
		}
		if err := l.b.nl.LinkSetMaster(l.b.link(t, "b0"), l.b.link(t, "br0")); err != nil {
			t.Fatalf("B: enslave b0 to br0: %v", err)
		}
		l.b.addr(t, "br0", addrBA)
		l.b.up(t, "br0")
	} else {
		l.b.addr(t, "b0", addrBA)
	}
	l.b.addr(t, "b1", addrBC)
	l.c.addr(t, "c0", addrC)
	for _, x := range []struct {
		n   *testNS
		dev string
	}{{l.a, "a0"}, {l.b, "b0"}, {l.b, "b1"}, {l.c, "c0"}} {
		x.n.up(t, x.dev)
	}
	l.a.defaultVia(t, "a0", addrBA)
	l.c.defaultVia(t, "c0", addrBC)
	if err := l.b.do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}); err != nil {
		t.Fatalf("B: ip_forward: %v", err)
	}
	return l
}

// udpFlow is a UDP sender in A and receiver in C.
type udpFlow struct {
	tx       *net.UDPConn
	rx       *net.UDPConn
	received atomic.Uint64
	wg       sync.WaitGroup
}

func (l *line) udpFlow(t testing.TB) *udpFlow {
	t.Helper()
	f := &udpFlow{}
	if err := l.c.do(func() (err error) {
		f.rx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrC, 0)))
		return err
	}); err != nil {
		t.Fatalf("C: listen: %v", err)
	}
	_ = f.rx.SetReadBuffer(4 << 20)
	to := f.rx.LocalAddr().(*net.UDPAddr)
	if err := l.a.do(func() (err error) {
		f.tx, err = net.DialUDP("udp4", nil, to)
		return err
	}); err != nil {
		f.rx.Close()
		t.Fatalf("A: dial %v: %v", to, err)
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		buf := make([]byte, 2048)
		for {
			if _, err := f.rx.Read(buf); err != nil {
				return
			}
			f.received.Add(1)
		}
	}()
	t.Cleanup(f.close)
	// One datagram first, so that ARP is done before anything is measured.
	if _, err := f.tx.Write([]byte("warm-up")); err != nil {
		t.Fatalf("A: send: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.received.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the warm-up datagram from A never reached C")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.received.Store(0)
	return f
}

// send sends 64-byte datagrams for d and returns how many the kernel
// accepted and the CPU time of the sending thread (which includes the
// softirq receive run in its local_bh_enable: this kernel does not account
// IRQ time separately, and a kernel that does leaves it out); it then
// waits until C has read everything that arrives.
func (f *udpFlow) send(d time.Duration) (sent uint64, cpu time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var r0, r1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &r0)
	buf := make([]byte, 64)
	end := time.Now().Add(d)
	for i := 0; ; i++ {
		if i%256 == 0 && time.Now().After(end) {
			break
		}
		if _, err := f.tx.Write(buf); err == nil {
			sent++
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			// ENOBUFS and the like: not sent.
			continue
		}
	}
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &r1)
	cpu = time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	// Let C's reader drain its socket.
	last, stable := f.received.Load(), 0
	for stable < 5 {
		time.Sleep(20 * time.Millisecond)
		if n := f.received.Load(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	return sent, cpu
}

func (f *udpFlow) close() {
	f.tx.Close()
	f.rx.Close()
	f.wg.Wait()
}
