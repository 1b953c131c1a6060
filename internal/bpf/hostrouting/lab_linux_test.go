//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package hostrouting

// A minimal Calico-style lab for the privileged tests: node and pod network
// namespaces (named cnb-hr<random>-<role>, 198.18.0.0/15 addresses, no link
// to the host namespace), built with netlink handles and torn down with
// t.Cleanup.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/nsrun"

	"github.com/cnibench/cnibench/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const (
	nsRunDir    = "/run/netns"
	gatewayIP   = "169.254.1.1" // Calico's fake next hop, answered by proxy ARP
	nftTable    = "cnbtest"
	wireIfName  = "wire0"
	podIfName   = "eth0"
	testTimeout = 10 * time.Second
)

func skipUnlessTool(t *testing.T, names ...string) {
	t.Helper()
	testutil.NeedProgram(t, names...)
}

// testPrefix returns a fresh "cnb-hr<hex>" prefix and registers (first, so
// it runs last) a cleanup check that nothing named with it is left in
// /run/netns.
func testPrefix(t *testing.T) string {
	t.Helper()
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random prefix: %v", err)
	}
	prefix := "cnb-hr" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if left := leftovers(prefix); len(left) > 0 {
			t.Errorf("left behind after cleanup: %v", left)
		}
	})
	return prefix
}

func leftovers(prefix string) []string {
	entries, err := os.ReadDir(nsRunDir)
	if err != nil {
		return nil
	}
	var left []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			left = append(left, filepath.Join(nsRunDir, e.Name()))
		}
	}
	return left
}

// netNS is a named network namespace with a netlink handle inside it.
type netNS struct {
	name string
	h    netns.NsHandle
	nl   *netlink.Handle
}

// runInNS runs fn on a fresh goroutine whose locked OS thread is switched
// into ns. If the thread cannot be switched back it is not unlocked, so the
// runtime discards it with the goroutine.
func runInNS(ns netns.NsHandle, fn func() error) error { return nsrun.Do(ns, fn) }

func newNetNS(t *testing.T, name string) *netNS {
	t.Helper()
	h, err := nsrun.NewNamed(name)
	res := struct {
		h   netns.NsHandle
		err error
	}{h, err}
	if res.err != nil {
		_ = netns.DeleteNamed(name)
		t.Fatalf("create netns %s: %v", name, res.err)
	}
	n := &netNS{name: name, h: res.h}
	t.Cleanup(func() {
		if n.nl != nil {
			n.nl.Close()
		}
		n.h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
	})
	nl, err := netlink.NewHandleAt(res.h)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", name, err)
	}
	n.nl = nl
	lo, err := nl.LinkByName("lo")
	if err != nil {
		t.Fatalf("%s: lo: %v", name, err)
	}
	if err := nl.LinkSetUp(lo); err != nil {
		t.Fatalf("%s: set lo up: %v", name, err)
	}
	return n
}

func (n *netNS) sysctl(t *testing.T, key, value string) {
	t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	err := runInNS(n.h, func() error { return os.WriteFile(path, []byte(value), 0o644) })
	if err != nil {
		t.Fatalf("%s: sysctl %s=%s: %v", n.name, key, value, err)
	}
}

func (n *netNS) run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	testutil.NeedProgram(t, "nsenter", name)
	full := append([]string{"--net=" + filepath.Join(nsRunDir, n.name), name}, args...)
	cmd := exec.Command("nsenter", full...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %s %s: %v: %s", n.name, name, strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func (n *netNS) link(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := n.nl.LinkByName(name)
	if err != nil {
		t.Fatalf("%s: link %s: %v", n.name, name, err)
	}
	return l
}

func (n *netNS) addr(t *testing.T, dev, cidr string) {
	t.Helper()
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatalf("parse %s: %v", cidr, err)
	}
	if err := n.nl.AddrAdd(n.link(t, dev), a); err != nil {
		t.Fatalf("%s: addr add %s dev %s: %v", n.name, cidr, dev, err)
	}
}

func (n *netNS) up(t *testing.T, dev string) {
	t.Helper()
	if err := n.nl.LinkSetUp(n.link(t, dev)); err != nil {
		t.Fatalf("%s: set %s up: %v", n.name, dev, err)
	}
}

func (n *netNS) route(t *testing.T, r *netlink.Route) {
	t.Helper()
	if err := n.nl.RouteAdd(r); err != nil {
		t.Fatalf("%s: route add %v: %v", n.name, r, err)
	}
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, c, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return c
}

// node is a router namespace with nftables FORWARD counters and conntrack
// engaged.
type node struct {
	*netNS
	podCIDR string
	pods    []*pod
}

type pod struct {
	*netNS
	ip      net.IP
	hostIf  string
	hostIdx int
}

type lab struct {
	prefix string
	nodes  []*node
	// dynamicNeigh leaves pods' neighbour entries on the node to ARP
	// instead of Calico-style permanent entries.
	dynamicNeigh bool
}

// newNode creates a node namespace: forwarding on, 169.254.1.1 routed to lo
// so proxy ARP answers for it, and an nftables forward chain that counts
// every forwarded packet (fwd_pkts) and, through a ct state match that engages
// conntrack, established ones (est_pkts).
func (l *lab) newNode(t *testing.T, role, podCIDR string) *node {
	t.Helper()
	n := &node{netNS: newNetNS(t, l.prefix+"-"+role), podCIDR: podCIDR}
	n.sysctl(t, "net.ipv4.ip_forward", "1")
	n.route(t, &netlink.Route{
		Dst:       &net.IPNet{IP: net.ParseIP(gatewayIP).To4(), Mask: net.CIDRMask(32, 32)},
		LinkIndex: n.link(t, "lo").Attrs().Index,
		Scope:     netlink.SCOPE_LINK,
	})
	n.run(t, fmt.Sprintf(`table inet %[1]s {
	counter fwd_pkts { }
	counter est_pkts { }
	chain forward {
		type filter hook forward priority filter; policy accept;
		counter name "fwd_pkts"
		ct state established counter name "est_pkts"
	}
}
`, nftTable), "nft", "-f", "-")
	l.nodes = append(l.nodes, n)
	return n
}

// nftCounter reads a named counter of the test table in n.
func (n *node) nftCounter(t *testing.T, name string) uint64 {
	t.Helper()
	out := n.run(t, "", "nft", "-j", "list", "counter", "inet", nftTable, name)
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%s: parse nft counter %s: %v: %s", n.name, name, err, out)
	}
	for _, e := range doc.Nftables {
		if e.Counter != nil {
			return e.Counter.Packets
		}
	}
	t.Fatalf("%s: nft counter %s not found in %s", n.name, name, out)
	return 0
}

// connectNodes joins two nodes with a veth "wire" (198.18.255.0/30) and
// routes each node's pod CIDR via the other's wire address.
func (l *lab) connectNodes(t *testing.T, a, b *node) {
	t.Helper()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: wireIfName},
		PeerName:      wireIfName,
		PeerNamespace: netlink.NsFd(int(b.h)),
	}
	if err := a.nl.LinkAdd(veth); err != nil {
		t.Fatalf("%s: add wire veth: %v", a.name, err)
	}
	a.addr(t, wireIfName, "198.18.255.1/30")
	b.addr(t, wireIfName, "198.18.255.2/30")
	a.up(t, wireIfName)
	b.up(t, wireIfName)
	a.route(t, &netlink.Route{Dst: mustCIDR(t, b.podCIDR), Gw: net.ParseIP("198.18.255.2"), LinkIndex: a.link(t, wireIfName).Attrs().Index})
	b.route(t, &netlink.Route{Dst: mustCIDR(t, a.podCIDR), Gw: net.ParseIP("198.18.255.1"), LinkIndex: b.link(t, wireIfName).Attrs().Index})
}

// newPod creates a Calico-style pod on n: eth0 with a /32, default route via
// 169.254.1.1 (proxy ARP on the host-side veth), a /32 route on the node
// and, as Calico's Felix does, a permanent neighbour entry for the pod
// (unless l.dynamicNeigh).
func (l *lab) newPod(t *testing.T, n *node, role, ip, hostIf string) *pod {
	t.Helper()
	p := &pod{netNS: newNetNS(t, l.prefix+"-"+role), ip: net.ParseIP(ip).To4(), hostIf: hostIf}
	mac := net.HardwareAddr{0x02, 0xcb, p.ip[0], p.ip[1], p.ip[2], p.ip[3]}
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: hostIf},
		PeerName:         podIfName,
		PeerHardwareAddr: mac,
		PeerNamespace:    netlink.NsFd(int(p.h)),
	}
	if err := n.nl.LinkAdd(veth); err != nil {
		t.Fatalf("%s: add pod veth %s: %v", n.name, hostIf, err)
	}
	n.sysctl(t, "net.ipv4.conf."+hostIf+".proxy_arp", "1")
	n.up(t, hostIf)
	p.hostIdx = n.link(t, hostIf).Attrs().Index
	n.route(t, &netlink.Route{Dst: &net.IPNet{IP: p.ip, Mask: net.CIDRMask(32, 32)}, LinkIndex: p.hostIdx, Scope: netlink.SCOPE_LINK})
	if !l.dynamicNeigh {
		if err := n.nl.NeighSet(&netlink.Neigh{LinkIndex: p.hostIdx, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, IP: p.ip, HardwareAddr: mac}); err != nil {
			t.Fatalf("%s: static neighbour for %s: %v", n.name, ip, err)
		}
	}

	p.addr(t, podIfName, ip+"/32")
	p.up(t, podIfName)
	eth0 := p.link(t, podIfName).Attrs().Index
	gw := net.ParseIP(gatewayIP).To4()
	p.route(t, &netlink.Route{Dst: &net.IPNet{IP: gw, Mask: net.CIDRMask(32, 32)}, LinkIndex: eth0, Scope: netlink.SCOPE_LINK})
	p.route(t, &netlink.Route{Gw: gw, LinkIndex: eth0})
	n.pods = append(n.pods, p)
	return p
}

// attach loads a Program for n and attaches it to all its pod veths and, if
// present, its wire; the Program is closed in t.Cleanup and by the caller's
// detach function (for the negative control).
func attach(t *testing.T, n *node, legacy bool) *Program {
	t.Helper()
	return attachWith(t, n, legacy, Options{})
}

// attachWith is attach with load options.
func attachWith(t *testing.T, n *node, legacy bool, opts Options) *Program {
	t.Helper()
	p, err := Load(opts)
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("%s: close program: %v", n.name, err)
		}
	})
	p.legacy = legacy
	err = runInNS(n.h, func() error {
		for _, pd := range n.pods {
			if err := p.AttachFromPod(pd.hostIdx); err != nil {
				return err
			}
		}
		if w, err := netlink.LinkByName(wireIfName); err == nil {
			return p.AttachFromWire(w.Attrs().Index)
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("%s: attach: %w", n.name, err)
	}
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	want := ModeTCX
	if legacy {
		want = ModeLegacy
	}
	if got := p.AttachMode(); got != want {
		t.Fatalf("%s: attach mode %q, want %q", n.name, got, want)
	}
	return p
}

// tcpExchange opens a TCP connection from client to server and sends size
// bytes each way (server echoes), checking the data.
func tcpExchange(t *testing.T, client, server *pod, port, size int) {
	t.Helper()
	addr := net.JoinHostPort(server.ip.String(), fmt.Sprint(port))
	var ln net.Listener
	if err := runInNS(server.h, func() (err error) {
		ln, err = net.Listen("tcp4", addr)
		return err
	}); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, server.name, err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(testTimeout))
		_, err = io.CopyN(c, c, int64(size))
		srvErr <- err
	}()

	var conn net.Conn
	if err := runInNS(client.h, func() (err error) {
		conn, err = net.DialTimeout("tcp4", addr, testTimeout)
		return err
	}); err != nil {
		t.Fatalf("dial %s from %s: %v", addr, client.name, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testTimeout))

	payload := make([]byte, size)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	wErr := make(chan error, 1)
	go func() {
		_, err := conn.Write(payload)
		wErr <- err
	}()
	got := make([]byte, size)
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("%s -> %s: read echo: %v", client.name, addr, err)
	}
	if err := <-wErr; err != nil {
		t.Fatalf("%s -> %s: write: %v", client.name, addr, err)
	}
	if err := <-srvErr; err != nil {
		t.Fatalf("%s: echo server: %v", server.name, err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("%s -> %s: echoed data differs", client.name, addr)
	}
}

// hostLinkNames is for a guard: the lab must never create anything in the
// test process's own namespace.
func hostLinkNames(t *testing.T) map[string]bool {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatalf("list host links: %v", err)
	}
	m := map[string]bool{}
	for _, l := range links {
		m[l.Attrs().Name] = true
	}
	return m
}

// hookedDevices returns the ifindexes on n that host routing attaches to.
func (n *node) hookedDevices(t *testing.T) []int {
	t.Helper()
	var idx []int
	for _, p := range n.pods {
		idx = append(idx, p.hostIdx)
	}
	if w, err := n.nl.LinkByName(wireIfName); err == nil {
		idx = append(idx, w.Attrs().Index)
	}
	return idx
}

// ingressHooks counts the TCX programs and the cls_bpf filters on clsact
// ingress of ifindex in n.
func (n *node) ingressHooks(t *testing.T, ifindex int) (tcx, clsBPF int) {
	t.Helper()
	err := runInNS(n.h, func() error {
		res, err := link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return fmt.Errorf("query tcx ingress: %w", err)
		}
		tcx = len(res.Programs)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: ifindex %d: %v", n.name, ifindex, err)
	}
	l, err := n.nl.LinkByIndex(ifindex)
	if err != nil {
		t.Fatalf("%s: ifindex %d: %v", n.name, ifindex, err)
	}
	filters, err := n.nl.FilterList(l, netlink.HANDLE_MIN_INGRESS)
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: no clsact qdisc
		t.Fatalf("%s: list ingress filters of %s: %v", n.name, l.Attrs().Name, err)
	}
	for _, f := range filters {
		if _, ok := f.(*netlink.BpfFilter); ok {
			clsBPF++
		}
	}
	return tcx, clsBPF
}

// checkHooks asserts how many programs are attached per hooked device.
func (n *node) checkHooks(t *testing.T, wantTCX, wantClsBPF int) {
	t.Helper()
	for _, idx := range n.hookedDevices(t) {
		tcx, cls := n.ingressHooks(t, idx)
		if tcx != wantTCX || cls != wantClsBPF {
			t.Errorf("%s: ifindex %d: %d tcx programs and %d cls_bpf filters, want %d and %d",
				n.name, idx, tcx, cls, wantTCX, wantClsBPF)
		}
	}
}
