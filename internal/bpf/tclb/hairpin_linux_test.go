//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package tclb

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// calicoGateway is Calico's fake next hop, answered by proxy ARP on the
// node's side of a pod's veth.
const calicoGateway = "169.254.1.1"

// calicoNode is a node namespace wired as the lab's Calico-style nodes
// are: forwarding on, 169.254.1.1 routed to lo (so proxy ARP on a pod veth
// answers for it), strict rp_filter (to show hairpinned packets never meet
// the node's routing), and pods added by addPod.
type calicoNode struct {
	do func(func() error) error
	ns netns.NsHandle
	nl *netlink.Handle
}

// calicoPod is a pod namespace: eth0 with a /32 and a default route via
// 169.254.1.1; hostIf is its veth's node side.
type calicoPod struct {
	do     func(func() error) error
	ip     netip.Addr
	hostIf string
}

func newCalicoNode(t *testing.T) *calicoNode {
	t.Helper()
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	n := &calicoNode{do: func(f func() error) error { return nsrun.Do(ns, f) }, ns: ns, nl: nl}
	lo := n.link(t, "lo")
	must(t, nl.LinkSetUp(lo))
	n.sysctl(t, "net/ipv4/ip_forward", "1")
	n.sysctl(t, "net/ipv4/conf/all/rp_filter", "1")
	must(t, nl.RouteAdd(&netlink.Route{Dst: mustNet(calicoGateway + "/32"), LinkIndex: lo.Attrs().Index, Scope: netlink.SCOPE_LINK}))
	return n
}

// addPod creates a pod with address ip behind node veth hostIf: proxy ARP
// (without Calico's delay, as Calico sets it) on hostIf and a /32 route to
// the pod through it.
func (n *calicoNode) addPod(t *testing.T, hostIf string, ip netip.Addr) *calicoPod {
	t.Helper()
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	hp, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Close()
	must(t, n.nl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostIf}, PeerName: "eth0", PeerNamespace: netlink.NsFd(ns)}))
	host := n.link(t, hostIf)
	n.sysctl(t, "net/ipv4/conf/"+hostIf+"/proxy_arp", "1")
	n.sysctl(t, "net/ipv4/neigh/"+hostIf+"/proxy_delay", "0")
	must(t, n.nl.LinkSetUp(host))
	must(t, n.nl.RouteAdd(&netlink.Route{Dst: mustNet(ip.String() + "/32"), LinkIndex: host.Attrs().Index, Scope: netlink.SCOPE_LINK}))

	eth0, err := hp.LinkByName("eth0")
	must(t, err)
	lo, err := hp.LinkByName("lo")
	must(t, err)
	must(t, hp.AddrAdd(eth0, &netlink.Addr{IPNet: mustNet(ip.String() + "/32")}))
	must(t, hp.LinkSetUp(eth0))
	must(t, hp.LinkSetUp(lo))
	must(t, hp.RouteAdd(&netlink.Route{Dst: mustNet(calicoGateway + "/32"), LinkIndex: eth0.Attrs().Index, Scope: netlink.SCOPE_LINK}))
	must(t, hp.RouteAdd(&netlink.Route{Gw: net.ParseIP(calicoGateway), LinkIndex: eth0.Attrs().Index}))
	return &calicoPod{do: func(f func() error) error { return nsrun.Do(ns, f) }, ip: ip, hostIf: hostIf}
}

func (n *calicoNode) link(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := n.nl.LinkByName(name)
	if err != nil {
		t.Fatalf("node: link %s: %v", name, err)
	}
	return l
}

// sysctl writes /proc/sys/<key> inside the node namespace.
func (n *calicoNode) sysctl(t *testing.T, key, value string) {
	t.Helper()
	err := n.do(func() error { return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644) })
	if err != nil {
		t.Fatalf("node: sysctl %s=%s: %v", key, value, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// loadAttached loads svcs and attaches them to each pod's node veth,
// skipping the test if the machine cannot; the LB is closed in cleanup.
func loadAttached(t *testing.T, svcs []Service, n *calicoNode, pods ...*calicoPod) *LB {
	t.Helper()
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	lb, err := Load(svcs, 0)
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	t.Cleanup(func() {
		if err := lb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	for _, p := range pods {
		if err := lb.Attach(n.do, p.hostIf); err != nil {
			testutil.SkipIfNotSupported(t, err, ErrNotSupported)
		}
	}
	return lb
}

// TestTCLBHairpin: a pod that is its service's only backend reaches it
// through the VIP, over TCP 50 times and over UDP. The pod sees the VIP as
// its peer, its server sees HairpinAddr, and the node's strict rp_filter
// and missing route to HairpinAddr do not matter (the packets are bounced
// at the veth). Detached, the VIP is unreachable.
func TestTCLBHairpin(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	node := newCalicoNode(t)
	pod := node.addPod(t, "cali0", netip.MustParseAddr("198.18.0.5"))
	served := newServedCount()
	backend := startEchoBoth(t, pod.do, netip.AddrPortFrom(pod.ip, 0), served)
	vip := netip.MustParseAddrPort("198.19.0.10:80")
	dns := netip.AddrPortFrom(vip.Addr(), 53)
	lb := loadAttached(t, []Service{
		{VIP: vip, Proto: TCP, Backends: []netip.AddrPort{backend}},
		{VIP: dns, Proto: UDP, Backends: []netip.AddrPort{backend}},
	}, node, pod)

	for i := range 50 {
		if err := exchangeTCP(pod.do, vip, fmt.Sprintf("hairpin %d", i)); err != nil {
			t.Fatalf("TCP exchange %d: %v", i, err)
		}
	}
	for i := range 3 {
		if err := exchangeUDP(pod.do, dns, fmt.Sprintf("udp %d", i)); err != nil {
			t.Fatalf("UDP exchange %d: %v", i, err)
		}
	}
	if peers := served.peerCounts(); peers[HairpinAddr] != 50 || len(peers) != 1 {
		t.Errorf("the pod's server saw peers %v, want 50 connections from %v", peers, HairpinAddr)
	}
	c, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counters %+v", c)
	// 50 TCP and 3 UDP flows; each TCP flow's SYN-ACK and echo, and each
	// UDP echo, is a hairpin reply rewritten back to the VIP.
	if c.Hairpin != 53 || c.New != 53 || c.Reverse < 50*2+3 || c.Forward == 0 || c.NoBackend != 0 {
		t.Errorf("counters %+v: want 53 new hairpin flows, >= 103 replies reversed, some forwarded", c)
	}
	noConntrack(t, node.do)

	if err := lb.Detach(); err != nil {
		t.Fatal(err)
	}
	if reachable(pod.do, vip) {
		t.Error("reached the VIP with the programs detached")
	}
}

// TestTCLBDevices attaches one LB to two pod veths on a Calico-style node
// and to a third device in another namespace (TestTCLB's lab, whose veth
// is also called n0 in its own namespace) and checks that: every pod
// reaches the service, pod a (the backend) by hairpin, pod b by plain DNAT
// to pod a, the third pod to a backend on its node; a failed Attach names
// its device and leaves the others attached; Detach leaves all three
// unreachable; and a later Attach works again.
func TestTCLBDevices(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	node := newCalicoNode(t)
	a := node.addPod(t, "cali-a", netip.MustParseAddr("198.18.0.5"))
	b := node.addPod(t, "cali-b", netip.MustParseAddr("198.18.0.6"))
	other := newTCLBLab(t, []string{"198.18.1.2"})
	served := newServedCount()
	backend := startEchoBoth(t, a.do, netip.AddrPortFrom(a.ip, 0), served)
	otherBackend := startEchoBoth(t, other.node, netip.MustParseAddrPort("198.18.1.2:0"), served)
	// A service per node, since neither node can reach the other's
	// backend; both live in the one set of maps.
	vip := netip.MustParseAddrPort("198.19.0.10:80")
	otherVIP := netip.MustParseAddrPort("198.19.0.11:80")
	lb := loadAttached(t, []Service{
		{VIP: vip, Proto: TCP, Backends: []netip.AddrPort{backend}},
		{VIP: otherVIP, Proto: TCP, Backends: []netip.AddrPort{otherBackend}},
	}, node, a, b)
	if err := lb.Attach(other.node, "n0"); err != nil {
		t.Fatal(err)
	}
	clients := []struct {
		name string
		do   func(func() error) error
		vip  netip.AddrPort
	}{{"pod a (hairpin)", a.do, vip}, {"pod b", b.do, vip}, {"other namespace's pod", other.pod, otherVIP}}
	exchangeAll := func(when string) {
		t.Helper()
		for _, c := range clients {
			for i := range 5 {
				if err := exchangeTCP(c.do, c.vip, "hi"); err != nil {
					t.Fatalf("%s: %s: exchange %d: %v", when, c.name, i, err)
				}
			}
		}
	}
	exchangeAll("attached")

	// Failures name the device and leave the others attached: a missing
	// device, and a second attach to the same one (the kernel refuses).
	for _, dev := range []string{"nonexistent0", "cali-b"} {
		if err := lb.Attach(node.do, dev); err == nil || !strings.Contains(err.Error(), dev) {
			t.Errorf("attach to %s: %v, want an error naming it", dev, err)
		}
	}
	exchangeAll("after failed attaches")
	if peers := served.peerCounts(); peers[HairpinAddr] != 10 || peers[b.ip] != 10 || peers[netip.MustParseAddr("198.18.0.1")] != 10 {
		t.Errorf("servers saw peers %v, want 10 connections each from %v, %v and 198.18.0.1", peers, HairpinAddr, b.ip)
	}
	c, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("counters %+v", c)
	if c.Hairpin != 10 || c.New != 30 {
		t.Errorf("counters %+v: want 30 new flows, 10 of them hairpinned", c)
	}

	if err := lb.Detach(); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		if reachable(c.do, c.vip) {
			t.Errorf("%s reached %v with the programs detached", c.name, c.vip)
		}
	}
	if err := lb.Attach(node.do, b.hostIf); err != nil {
		t.Fatal(err)
	}
	if err := exchangeTCP(b.do, vip, "again"); err != nil {
		t.Errorf("re-attached: %v", err)
	}
}

// noConntrack fails the test if anything engaged conntrack in the
// namespace do runs in.
func noConntrack(t *testing.T, do func(func() error) error) {
	t.Helper()
	var ct []byte
	_ = do(func() error {
		ct, _ = os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_count")
		return nil
	})
	if n := strings.TrimSpace(string(ct)); n != "" && n != "0" {
		t.Errorf("node namespace conntrack count %s, want 0", n)
	}
}
