package ipsec

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// wireIf is the veth end in each test node.
const wireIf = "wire0"

// nodePair is two anonymous network namespaces ("nodes") joined by a veth,
// each with a "pod" address on its loopback inside its pod CIDR: small
// enough for a test, and the same paths as the lab's (pod traffic between
// nodes over the wire). newRoutedPair builds the lab's own layout instead
// (pods in namespaces of their own). Everything goes when the test ends.
type nodePair struct {
	ns     [2]netns.NsHandle
	h      [2]*netlink.Handle
	wire   [2]netip.Addr
	pod    [2]netip.Addr
	podNet [2]netip.Prefix
	// podNS, in the routed layout (newRoutedPair), is each pod's own
	// namespace; otherwise the pod address is on the node's loopback.
	podNS [2]netns.NsHandle
	// routed: the lab's veth-routing layout (newRoutedPair).
	routed bool
}

func (p *nodePair) do(i int) testutil.Do {
	return func(f func() error) error { return nsrun.Do(p.ns[i], f) }
}

// podDo runs f where node i's pod address lives: its pod namespace in the
// routed layout, the node's namespace otherwise.
func (p *nodePair) podDo(i int) testutil.Do {
	if p.routed {
		return func(f func() error) error { return nsrun.Do(p.podNS[i], f) }
	}
	return p.do(i)
}

// newNodePair builds the pair with wire addresses wire[i]/24 and pod
// addresses pod[i]/32 (pod CIDR pod[i]/24).
func newNodePair(t *testing.T, wire, pod [2]string) *nodePair {
	t.Helper()
	return buildNodePair(t, wire, pod, false)
}

// newRoutedPair builds the lab's veth-routing layout (internal/lab,
// datapath/routed_linux.go) instead: each pod in its own namespace behind a veth
// (pod[i]/32, default route via a link-local gateway that the node's proxy
// ARP answers), the node forwarding, with a /32 route to its pod and the
// other node's pod CIDR routed via its wire address from the start — and,
// unlike newNodePair, no address of the node's own inside its pod CIDR.
func newRoutedPair(t *testing.T, wire, pod [2]string) *nodePair {
	t.Helper()
	return buildNodePair(t, wire, pod, true)
}

// Names in the routed layout.
const (
	podIf     = "eth0" // the pod's end of its veth
	podHostIf = "pod0" // the node's end
	podGW     = "169.254.1.1"
)

func buildNodePair(t *testing.T, wire, pod [2]string, routed bool) *nodePair {
	t.Helper()
	p := &nodePair{routed: routed}
	for i := range 2 {
		ns, err := nsrun.NewScratch()
		if err != nil {
			t.Fatal(err)
		}
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			ns.Close()
			t.Fatal(err)
		}
		p.ns[i], p.h[i] = ns, h
		t.Cleanup(func() { h.Close(); ns.Close() })
		p.wire[i] = netip.MustParseAddr(wire[i])
		p.pod[i] = netip.MustParseAddr(pod[i])
		p.podNet[i] = netip.PrefixFrom(p.pod[i], 24).Masked()
		// No IPv6: no router solicitations or DAD on the captured wire.
		if err := p.do(i)(func() error {
			for _, k := range []string{"net/ipv6/conf/all/disable_ipv6", "net/ipv6/conf/default/disable_ipv6"} {
				if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte("1"), 0o644); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("node %d: disable IPv6: %v", i, err)
		}
		lo, err := h.LinkByName("lo")
		if err == nil {
			err = h.LinkSetUp(lo)
		}
		if err == nil && !routed {
			err = h.AddrAdd(lo, &netlink.Addr{IPNet: netlink.NewIPNet(p.pod[i].AsSlice())})
		}
		if err != nil {
			t.Fatalf("node %d: loopback and pod address: %v", i, err)
		}
		if routed {
			p.addRoutedPod(t, i)
		}
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: wireIf}, PeerName: wireIf, PeerNamespace: netlink.NsFd(p.ns[1])}
	if err := p.h[0].LinkAdd(veth); err != nil {
		t.Fatalf("create the wire veth: %v", err)
	}
	for i := range 2 {
		l, err := p.h[i].LinkByName(wireIf)
		if err == nil {
			err = p.h[i].AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: p.wire[i].AsSlice(), Mask: net.CIDRMask(24, 32)}})
		}
		if err == nil {
			err = p.h[i].LinkSetUp(l)
		}
		if err != nil {
			t.Fatalf("node %d: wire: %v", i, err)
		}
		if routed {
			// The lab routes the other node's pod CIDR via the wire
			// before any tunnel exists, and leaves that route in place.
			err = p.h[i].RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(p.podNet[1-i]), Gw: p.wire[1-i].AsSlice()})
			if err != nil {
				t.Fatalf("node %d: route to %v: %v", i, p.podNet[1-i], err)
			}
		}
	}
	return p
}

// addRoutedPod puts node i's pod into its own namespace, as the lab's
// veth-routing datapath does.
func (p *nodePair) addRoutedPod(t *testing.T, i int) {
	t.Helper()
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	ph, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		t.Fatal(err)
	}
	p.podNS[i] = ns
	t.Cleanup(func() { ph.Close(); ns.Close() })
	gw := netip.MustParseAddr(podGW)
	fail := func(what string, err error) {
		t.Helper()
		t.Fatalf("node %d: pod: %s: %v", i, what, err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: podHostIf}, PeerName: podIf, PeerNamespace: netlink.NsFd(ns)}
	if err := p.h[i].LinkAdd(veth); err != nil {
		fail("create the veth", err)
	}
	// Pod side: /32 address, default route via the gateway.
	for _, name := range []string{"lo", podIf} {
		l, err := ph.LinkByName(name)
		if err == nil {
			err = ph.LinkSetUp(l)
		}
		if err != nil {
			fail("link "+name, err)
		}
	}
	eth, err := ph.LinkByName(podIf)
	if err != nil {
		fail("find "+podIf, err)
	}
	if err := ph.AddrAdd(eth, &netlink.Addr{IPNet: netlink.NewIPNet(p.pod[i].AsSlice())}); err != nil {
		fail("address", err)
	}
	if err := ph.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Dst: netlink.NewIPNet(gw.AsSlice()), Scope: netlink.SCOPE_LINK}); err != nil {
		fail("route to the gateway", err)
	}
	if err := ph.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw.AsSlice()}); err != nil {
		fail("default route", err)
	}
	// Node side: forwarding, proxy ARP answers for the gateway (only if
	// the node routes it elsewhere: to lo), /32 route to the pod.
	if err := p.do(i)(func() error {
		for _, kv := range [][2]string{
			{"net/ipv4/ip_forward", "1"},
			{"net/ipv4/conf/" + podHostIf + "/proxy_arp", "1"},
			{"net/ipv4/neigh/" + podHostIf + "/proxy_delay", "0"},
		} {
			if err := os.WriteFile(filepath.Join("/proc/sys", kv[0]), []byte(kv[1]), 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		fail("forwarding and proxy ARP", err)
	}
	host, err := p.h[i].LinkByName(podHostIf)
	if err == nil {
		err = p.h[i].LinkSetUp(host)
	}
	if err != nil {
		fail("node end of the veth", err)
	}
	lo, err := p.h[i].LinkByName("lo")
	if err != nil {
		fail("node lo", err)
	}
	if err := p.h[i].RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: netlink.NewIPNet(gw.AsSlice()), Scope: netlink.SCOPE_LINK}); err != nil {
		fail("node route to the gateway", err)
	}
	if err := p.h[i].RouteAdd(&netlink.Route{LinkIndex: host.Attrs().Index, Dst: netlink.NewIPNet(p.pod[i].AsSlice()), Scope: netlink.SCOPE_LINK}); err != nil {
		fail("node route to the pod", err)
	}
}

// podRoutes adds (on) or deletes the plain routes to the other node's pod
// CIDR via its wire address, with the local pod address as source.
func (p *nodePair) podRoutes(t *testing.T, on bool) {
	t.Helper()
	for i := range 2 {
		l, err := p.h[i].LinkByName(wireIf)
		if err != nil {
			t.Fatal(err)
		}
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(p.podNet[1-i]), Gw: p.wire[1-i].AsSlice(), Src: p.pod[i].AsSlice()}
		if on {
			err = p.h[i].RouteAdd(r)
		} else {
			err = p.h[i].RouteDel(r)
		}
		if err != nil {
			t.Fatalf("node %d: route %v (add %v): %v", i, r, on, err)
		}
	}
}

// tunnel is node 0's side of an ESP tunnel between the pair.
func (p *nodePair) tunnel(t *testing.T, alg Algorithm) Tunnel {
	t.Helper()
	tun, err := NewTunnel(alg, p.wire[0], p.wire[1], p.podNet[0], p.podNet[1])
	if err != nil {
		t.Fatal(err)
	}
	return tun
}

// newMarker returns a random marker: a payload that cannot appear on the
// wire by chance.
func newMarker(t *testing.T) []byte {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return []byte("cnibench-marker-" + hex.EncodeToString(b))
}

// sendUDP sends marker from node 0's pod address to node 1's, once every
// 100 ms until node 1 received it (at most 5 s), and fails the test if it
// never arrives intact.
func (p *nodePair) sendUDP(t *testing.T, marker []byte) {
	t.Helper()
	var srv, cli *net.UDPConn
	if err := p.podDo(1)(func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: p.pod[1].AsSlice()})
		return err
	}); err != nil {
		t.Fatalf("listen on %v: %v", p.pod[1], err)
	}
	defer srv.Close()
	if err := p.podDo(0)(func() (err error) {
		cli, err = net.DialUDP("udp4", &net.UDPAddr{IP: p.pod[0].AsSlice()}, srv.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatalf("dial from %v: %v", p.pod[0], err)
	}
	defer cli.Close()
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 2048)
	for time.Now().Before(deadline) {
		if _, err := cli.Write(marker); err != nil {
			t.Fatalf("send: %v", err)
		}
		_ = srv.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, from, err := srv.ReadFromUDP(buf)
		if err != nil {
			continue
		}
		if !bytes.Equal(buf[:n], marker) || !from.IP.Equal(p.pod[0].AsSlice()) {
			t.Fatalf("received %q from %v, want the marker from %v", buf[:n], from, p.pod[0])
		}
		return
	}
	t.Fatalf("marker from %v never reached %v", p.pod[0], p.pod[1])
}

// streamTCP sends TCP data from node 0's pod to node 1's for about d and
// returns the goodput in Mbit/s (a rough figure for the log).
func (p *nodePair) streamTCP(t *testing.T, d time.Duration) float64 {
	t.Helper()
	var ln net.Listener
	if err := p.podDo(1)(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(p.pod[1], 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	var received int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<16)
		for {
			n, err := c.Read(buf)
			received += int64(n)
			if err != nil {
				return
			}
		}
	}()
	var c net.Conn
	if err := p.podDo(0)(func() (err error) {
		dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: p.pod[0].AsSlice()}, Timeout: 5 * time.Second}
		c, err = dialer.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	start := time.Now()
	_ = c.SetWriteDeadline(start.Add(d + 5*time.Second))
	for time.Since(start) < d {
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("TCP stream: %v", err)
		}
	}
	c.Close()
	wg.Wait()
	return float64(received) * 8 / time.Since(start).Seconds() / 1e6
}

// capture records every frame on one interface of a namespace (AF_PACKET,
// inside the namespace: nothing of the host is captured).
type capture struct {
	fd   int
	mu   sync.Mutex
	pkts [][]byte
	quit chan struct{}
	done chan struct{}
}

func startCapture(t *testing.T, do testutil.Do, h *netlink.Handle, ifName string) *capture {
	t.Helper()
	l, err := h.LinkByName(ifName)
	if err != nil {
		t.Fatal(err)
	}
	proto := int(htons(unix.ETH_P_ALL))
	c := &capture{quit: make(chan struct{}), done: make(chan struct{})}
	if err := do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		c.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index}); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind to %s: %w", ifName, err)
		}
		tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}); err != nil {
		t.Fatal(err)
	}
	go c.loop()
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *capture) loop() {
	defer close(c.done)
	buf := make([]byte, 65536)
	flags := 0
	for {
		if flags == 0 {
			select {
			case <-c.quit:
				// Drain what is queued: a frame can still be in the
				// socket when the traffic that caused it is over.
				flags = unix.MSG_DONTWAIT
			default:
			}
		}
		n, _, err := unix.Recvfrom(c.fd, buf, flags)
		if err != nil || n <= 0 {
			if flags != 0 {
				return // drained
			}
			continue // timeout (EAGAIN): check quit
		}
		c.mu.Lock()
		c.pkts = append(c.pkts, bytes.Clone(buf[:n]))
		c.mu.Unlock()
	}
}

// stop ends the capture and returns the frames; it may be called again.
func (c *capture) stop() [][]byte {
	select {
	case <-c.quit:
	default:
		close(c.quit)
		<-c.done
		unix.Close(c.fd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pkts
}

// frameStats counts captured Ethernet frames: those that contain marker,
// ESP ones (IP protocol 50) and ESP-in-UDP ones (UDP port 4500 with a
// non-zero first word, i.e. not an IKE message).
type frameStats struct{ marker, esp, espInUDP, total int }

func analyse(pkts [][]byte, marker []byte) frameStats {
	var s frameStats
	for _, f := range pkts {
		s.total++
		if bytes.Contains(f, marker) {
			s.marker++
		}
		if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:14]) != unix.ETH_P_IP {
			continue
		}
		ip := f[14:]
		ihl := int(ip[0]&0x0f) * 4
		switch ip[9] {
		case unix.IPPROTO_ESP:
			s.esp++
		case unix.IPPROTO_UDP:
			if len(ip) >= ihl+8+4 {
				udp := ip[ihl:]
				port := binary.BigEndian.Uint16(udp[2:4])
				if port == 4500 && binary.BigEndian.Uint32(udp[8:12]) != 0 {
					s.espInUDP++
				}
			}
		}
	}
	return s
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
