package capture_test

// Privileged tests: two anonymous namespaces joined by a veth whose ends
// are both named wire0, as a lab node's link to its peer (198.18.212.1/24
// in A, .2/24 in B). Closing the namespace handles when a test ends
// destroys them with the veth; no host interface is touched.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/capture"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

const wire = "wire0"

var (
	addrA = netip.MustParseAddr("198.18.212.1")
	addrB = netip.MustParseAddr("198.18.212.2")
)

type node struct {
	h  netns.NsHandle
	nl *netlink.Handle
}

func (n *node) do(f func() error) error { return nsrun.Do(n.h, f) }

func newNode(t *testing.T) *node {
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
	return &node{h: h, nl: nl}
}

func (n *node) up(t *testing.T, name string, addr netip.Addr) {
	t.Helper()
	l, err := n.nl.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	if addr.IsValid() {
		ipn := netlink.NewIPNet(addr.AsSlice())
		ipn.Mask = net.CIDRMask(24, 32)
		if err := n.nl.AddrAdd(l, &netlink.Addr{IPNet: ipn}); err != nil {
			t.Fatalf("add %s/24 to %s: %v", addr, name, err)
		}
	}
	if err := n.nl.LinkSetUp(l); err != nil {
		t.Fatalf("set %s up: %v", name, err)
	}
}

// newPair builds A and B joined by wire0.
func newPair(t *testing.T) (a, b *node) {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	a, b = newNode(t), newNode(t)
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: wire}, PeerName: wire, PeerNamespace: netlink.NsFd(int(b.h))}
	if err := a.nl.LinkAdd(v); err != nil {
		t.Fatalf("add veth %s: %v", wire, err)
	}
	a.up(t, "lo", netip.Addr{})
	b.up(t, "lo", netip.Addr{})
	a.up(t, wire, addrA)
	b.up(t, wire, addrB)
	return a, b
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// sink listens on B and discards whatever its connections send; idle
// waits until every connection it accepted is closed.
type sink struct {
	addr   string
	active sync.WaitGroup
}

func newSink(t *testing.T, b *node) *sink {
	t.Helper()
	var ln net.Listener
	if err := b.do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addrB.String(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := &sink{addr: ln.Addr().String()}
	var accepting sync.WaitGroup
	t.Cleanup(func() { ln.Close(); accepting.Wait(); s.active.Wait() })
	accepting.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.active.Go(func() { _, _ = io.Copy(io.Discard, c); c.Close() })
		}
	})
	return s
}

// stream sends buf over TCP from A to the sink, again and again, for d,
// and returns once the sink has read everything and closed its side: the
// interfaces' counters stand still then.
func stream(t *testing.T, a *node, s *sink, buf []byte, d time.Duration) uint64 {
	t.Helper()
	var c net.Conn
	if err := a.do(func() (err error) {
		c, err = net.Dial("tcp", s.addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var sent uint64
	for end := time.Now().Add(d); time.Now().Before(end); {
		n, err := c.Write(buf)
		sent += uint64(n)
		if err != nil {
			c.Close()
			t.Fatalf("stream: %v", err)
		}
	}
	c.Close()
	s.active.Wait()
	return sent
}

// captureOn runs f under a capture of the wire0 of each node, checks that
// the captures leave no file descriptor open and returns their results.
func captureOn(t *testing.T, nodes []*node, markers [][]byte, o capture.Options, f func()) []capture.Result {
	t.Helper()
	before := openFDs(t)
	var cs []*capture.Capture
	for i, n := range nodes {
		c, err := capture.Start(n.do, wire, markers, o)
		if err != nil {
			for _, c := range cs {
				c.Stop()
			}
			t.Fatalf("capture %d: %v", i, err)
		}
		cs = append(cs, c)
	}
	f()
	var rs []capture.Result
	for i, c := range cs {
		r, err := c.Stop()
		if err != nil {
			t.Errorf("stop capture %d: %v", i, err)
		}
		if _, err := c.Stop(); err == nil {
			t.Error("a second Stop succeeded")
		}
		t.Logf("capture %d: %s (reader CPU %s): %d frames (%d in as %d wire packets, rx-gro %v; %d out; %d bytes on the wire), %d with the marker, dropped %d, socket saw %d; interface rx %d + tx %d: coverage %.4f; by proto: %s",
			i, r.Duration.Round(time.Millisecond), r.ReaderCPU.Round(time.Millisecond), r.Frames, r.In, r.InSegs, r.RxGRO, r.Out, r.Bytes,
			r.MarkerFrames, r.Dropped, r.SocketPackets, r.IfaceRx, r.IfaceTx, r.IfaceCoverage(), capture.FormatCounts(r.ByProto))
		if r.Frames+r.Dropped != r.SocketPackets {
			t.Errorf("capture %d: captured %d + dropped %d != %d frames offered to the socket: frames left in the ring", i, r.Frames, r.Dropped, r.SocketPackets)
		}
		rs = append(rs, r)
	}
	if after := openFDs(t); after > before { // fewer: something else (the traffic) closed one
		t.Errorf("%d file descriptors open before the captures, %d after", before, after)
	}
	return rs
}

// ethtool's legacy commands that set TSO and GRO (struct ethtool_value).
const (
	ethtoolSTSO = 0x1f
	ethtoolSGRO = 0x2c
)

func ethtoolSet(fd int, iface string, cmd, val uint32) error {
	value := struct{ cmd, data uint32 }{cmd, val}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:unix.IFNAMSIZ-1], iface)
	ifr.data = uintptr(unsafe.Pointer(&value))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&value)
	if errno != 0 {
		return fmt.Errorf("ethtool command %#x on %s: %w", cmd, iface, errno)
	}
	return nil
}

// nicLike configures n's wire0 as the lab's NIC-like wire does: no TSO (the
// kernel segments to the MTU before the wire), GRO on (the receiver merges
// segments again before the capture sees them).
func nicLike(t *testing.T, n *node) {
	t.Helper()
	err := n.do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := ethtoolSet(fd, wire, ethtoolSTSO, 0); err != nil {
			return err
		}
		return ethtoolSet(fd, wire, ethtoolSGRO, 1)
	})
	if err != nil {
		t.Fatalf("NIC-like wire: %v", err)
	}
}

// wires are the two ways the lab's nodes are joined.
var wires = []struct {
	name string
	nic  bool
}{{"veth", false}, {"nic-like", true}}

func newWire(t *testing.T, nic bool) (a, b *node) {
	a, b = newPair(t)
	if nic {
		nicLike(t, a)
		nicLike(t, b)
	}
	return a, b
}

func markerBuf() []byte {
	buf := make([]byte, 128<<10)
	engine.FillPayload(buf)
	return buf
}

// TestMarkerInClear streams marker-filled buffers from A to B and captures
// on both ends of the wire: the negative control must pass, the encrypted
// verdict fail.
func TestMarkerInClear(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			a, b := newWire(t, w.nic)
			s := newSink(t, b)
			rs := captureOn(t, []*node{a, b}, [][]byte{engine.PayloadMarker}, capture.Options{}, func() {
				stream(t, a, s, markerBuf(), 500*time.Millisecond)
			})
			for i, r := range rs {
				if r.MarkerFrames == 0 {
					t.Fatalf("capture %d: the marker is in none of %d frames", i, r.Frames)
				}
				if r.In == 0 || r.Out == 0 {
					t.Errorf("capture %d: frames in %d, out %d: want both directions (data, ACKs)", i, r.In, r.Out)
				}
				if r.MarkerByProto["tcp"] != r.MarkerFrames {
					t.Errorf("capture %d: marker frames by proto %v, want all tcp", i, r.MarkerByProto)
				}
				if err := r.Verdict(false); err != nil {
					t.Errorf("capture %d: negative control: %v", i, err)
				}
				err := r.Verdict(true)
				if !errors.Is(err, capture.ErrCleartext) {
					t.Errorf("capture %d: Verdict(encrypted) = %v, want ErrCleartext", i, err)
				}
				t.Logf("capture %d: Verdict(encrypted): %v", i, err)
			}
			if w.nic && !rs[1].RxGRO {
				t.Errorf("B's wire0 has rx-gro on, the capture says off")
			}
		})
	}
}

// TestMarkerAbsentWhenScrambled streams the same buffers XOR-ed: no marker
// on the wire. With tcp standing for the encryption protocol the proof's
// positive path passes, which needs both captures to have kept up (their
// frames match the interfaces' counters, GRO or not).
func TestMarkerAbsentWhenScrambled(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			a, b := newWire(t, w.nic)
			s := newSink(t, b)
			buf := markerBuf()
			for i := range buf {
				buf[i] ^= 0x5a
			}
			rs := captureOn(t, []*node{a, b}, [][]byte{engine.PayloadMarker}, capture.Options{EncProtos: []string{"tcp"}}, func() {
				stream(t, a, s, buf, 500*time.Millisecond)
			})
			for i, r := range rs {
				if r.MarkerFrames != 0 {
					t.Fatalf("capture %d: the marker is in %d frames of a scrambled stream", i, r.MarkerFrames)
				}
				if err := r.Verdict(true); err != nil {
					t.Errorf("capture %d: Verdict(encrypted) with tcp as the encryption protocol: %v", i, err)
				}
				if err := r.Verdict(false); !errors.Is(err, capture.ErrUnproven) {
					t.Errorf("capture %d: negative control = %v, want ErrUnproven", i, err)
				}
				r.EncProtos = capture.DefaultEncProtos()
				err := r.Verdict(true)
				if !errors.Is(err, capture.ErrUnproven) || !strings.Contains(err.Error(), "no traffic captured") {
					t.Errorf("capture %d: Verdict(encrypted) without the encryption protocol = %v, want ErrUnproven: no traffic captured", i, err)
				}
				t.Logf("capture %d: Verdict(encrypted) without ESP or WireGuard: %v", i, err)
			}
		})
	}
}

// flood sends payload in UDP datagrams from A to B's discard socket at up
// to rate bit/s (0: as fast as it can) for d, from senders threads; it
// returns the datagrams sent.
func flood(t *testing.T, a, b *node, payload []byte, rate float64, d time.Duration, senders int) uint64 {
	t.Helper()
	var rfd int
	if err := b.do(func() (err error) {
		rfd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Bind(rfd, &unix.SockaddrInet4{Addr: addrB.As4(), Port: 9})
	}); err != nil {
		t.Fatalf("discard socket: %v", err)
	}
	defer unix.Close(rfd)
	var sent atomic.Uint64
	var wg sync.WaitGroup
	size := len(payload)
	for i := 0; i < senders; i++ {
		var fd int
		if err := a.do(func() (err error) {
			fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return unix.Connect(fd, &unix.SockaddrInet4{Addr: addrB.As4(), Port: 9})
		}); err != nil {
			t.Fatalf("sender socket: %v", err)
		}
		wg.Go(func() {
			defer unix.Close(fd)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			perSender := rate / float64(senders) / float64(8*size) // datagrams/s
			start := time.Now()
			var n uint64
			for time.Since(start) < d {
				if perSender > 0 && float64(n) > perSender*time.Since(start).Seconds() {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				if _, err := unix.Write(fd, payload); err == nil {
					n++
				}
			}
			sent.Add(n)
		})
	}
	wg.Wait()
	return sent.Load()
}

func markerDatagram(size int) []byte {
	b := make([]byte, size)
	engine.FillPayload(b)
	return b
}

func TestCoverageUDPFlood(t *testing.T) {
	a, b := newPair(t)
	const size, d = 1400, time.Second
	payload := markerDatagram(size)
	// What the senders manage without a capture, for comparison.
	base := flood(t, a, b, payload, 0, d, 2)
	t.Logf("without a capture: %.2f Gbit/s", float64(base)*size*8/d.Seconds()/1e9)
	for _, c := range []struct {
		name    string
		rate    float64
		senders int
	}{
		{"3 Gbit/s", 3e9, 1},
		{"flat out", 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent uint64
			r := captureOn(t, []*node{a}, [][]byte{engine.PayloadMarker}, capture.Options{}, func() {
				sent = flood(t, a, b, payload, c.rate, d, c.senders)
			})[0]
			t.Logf("sent %d datagrams of %d bytes: %.2f Gbit/s; captured %d (%.4f of the interface's packets), dropped %d (%.4f of the socket's)",
				sent, size, float64(sent)*size*8/d.Seconds()/1e9, r.Frames, r.IfaceCoverage(), r.Dropped, 1-r.SocketCoverage())
			if r.ByProto["udp/9"] < sent*9/10 && r.Dropped == 0 {
				t.Errorf("captured %d udp/9 frames of %d sent, with no drop reported", r.ByProto["udp/9"], sent)
			}
			if r.MarkerFrames < r.ByProto["udp/9"] {
				t.Errorf("the marker is in %d of %d flood frames", r.MarkerFrames, r.ByProto["udp/9"])
			}
			// The capture accounts for every frame the interface
			// counted: scanned or reported as dropped.
			if seen, counted := r.Frames+r.Dropped, r.IfaceRx+r.IfaceTx; seen < counted*99/100 {
				t.Errorf("captured %d + dropped %d frames, the interface counted %d", r.Frames, r.Dropped, counted)
			}
			if err := r.Check(); err != nil {
				t.Logf("the capture says it did not keep up: %v", err)
			}
		})
	}
}

// TestSlowReaderSaysSo makes the reader slow (scanning each frame for many
// markers) and its ring small: the capture must report the frames it
// missed, and refuse to prove anything with them missing.
func TestSlowReaderSaysSo(t *testing.T) {
	a, b := newPair(t)
	markers := [][]byte{engine.PayloadMarker}
	for i := 0; i < 5000; i++ {
		m := []byte("cnibench:never-on-the-wire:0000")
		copy(m[len(m)-4:], []byte{byte('a' + i%26), byte('a' + i/26%26), byte('a' + i/676%26), '!'})
		markers = append(markers, m)
	}
	o := capture.Options{RingSize: 256 << 10, BlockSize: 64 << 10, EncProtos: []string{"udp/9"}}
	payload := markerDatagram(1400)
	for i := range payload {
		payload[i] ^= 0x5a // no marker: every frame is scanned for all of them
	}
	r := captureOn(t, []*node{a}, markers, o, func() {
		flood(t, a, b, payload, 0, 500*time.Millisecond, 1)
	})[0]
	if r.Dropped == 0 {
		t.Skipf("the slowed reader kept up (%d frames): nothing to check", r.Frames)
	}
	err := r.Check()
	if err == nil || !strings.Contains(err.Error(), "did not keep up") {
		t.Errorf("Check = %v, want it to say the capture did not keep up", err)
	}
	if err := r.Verdict(true); !errors.Is(err, capture.ErrUnproven) {
		t.Errorf("Verdict(encrypted) = %v, want ErrUnproven", err)
	}
	t.Logf("Check: %v", err)
}

func TestStartErrors(t *testing.T) {
	a, _ := newPair(t)
	before := openFDs(t)
	for _, c := range []struct {
		name    string
		iface   string
		markers [][]byte
		o       capture.Options
		want    string
	}{
		{"no such interface", "nosuch0", [][]byte{engine.PayloadMarker}, capture.Options{}, "find interface"},
		{"no marker", wire, nil, capture.Options{}, "no marker"},
		{"short marker", wire, [][]byte{[]byte("abc")}, capture.Options{}, "at least"},
		{"bad block size", wire, [][]byte{engine.PayloadMarker}, capture.Options{BlockSize: 1000}, "block size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp, err := capture.Start(a.do, c.iface, c.markers, c.o)
			if err == nil {
				cp.Stop()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Start = %v, want it to say %q", err, c.want)
			}
		})
	}
	if after := openFDs(t); after > before { // fewer: something else (the traffic) closed one
		t.Errorf("%d file descriptors open before, %d after failed starts", before, after)
	}
}
