package filter

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/nsrun"
)

// nfLab is three namespaces: client (198.18.0.2) — node (forwarding,
// 198.18.0.1 on Dev "n0", 198.18.1.1 on "n1") — server (198.18.1.2 plus
// extra addresses inside 240.0.0.0/4). The node routes 240.0.0.0/4 to the
// server, so a probe to a denied address can only be dropped by the filter.
type nfLab struct {
	target         Target
	client, server func(f func() error) error
	serverLink     string
}

var nfLabSeq atomic.Int32

const (
	nfClientAddr = "198.18.0.2"
	nfServerAddr = "198.18.1.2"
	nfDev        = "n0"
)

func newNFLab(tb testing.TB, serverExtra ...netip.Addr) *nfLab {
	tb.Helper()
	name := fmt.Sprintf("cnb-t-h1-%d-%d", os.Getpid(), nfLabSeq.Add(1))
	node, err := nsrun.NewNamed(name)
	if err != nil {
		tb.Fatalf("create node netns: %v", err)
	}
	tb.Cleanup(func() {
		node.Close()
		if err := netns.DeleteNamed(name); err != nil {
			tb.Errorf("delete netns %s: %v", name, err)
		}
	})
	client, err := nsrun.NewScratch()
	if err != nil {
		tb.Fatalf("create client netns: %v", err)
	}
	tb.Cleanup(func() { client.Close() })
	server, err := nsrun.NewScratch()
	if err != nil {
		tb.Fatalf("create server netns: %v", err)
	}
	tb.Cleanup(func() { server.Close() })

	l := &nfLab{
		target: Target{NSPath: "/run/netns/" + name, NSFd: int(node), Dev: nfDev,
			Do: func(f func() error) error { return nsrun.Do(node, f) }},
		client:     func(f func() error) error { return nsrun.Do(client, f) },
		server:     func(f func() error) error { return nsrun.Do(server, f) },
		serverLink: "s0",
	}
	must := func(what string, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatalf("lab: %s: %v", what, err)
		}
	}
	hNode, err := netlink.NewHandleAt(node)
	must("netlink handle in node", err)
	defer hNode.Close()
	hClient, err := netlink.NewHandleAt(client)
	must("netlink handle in client", err)
	defer hClient.Close()
	hServer, err := netlink.NewHandleAt(server)
	must("netlink handle in server", err)
	defer hServer.Close()

	must("veth n0/c0", hNode.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: nfDev}, PeerName: "c0", PeerNamespace: netlink.NsFd(int(client))}))
	must("veth n1/s0", hNode.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "n1"}, PeerName: "s0", PeerNamespace: netlink.NsFd(int(server))}))
	up := func(h *netlink.Handle, dev string, addrs ...string) {
		tb.Helper()
		link, err := h.LinkByName(dev)
		must("find "+dev, err)
		for _, a := range addrs {
			addr, err := netlink.ParseAddr(a)
			must("parse "+a, err)
			must("address "+a+" on "+dev, h.AddrAdd(link, addr))
		}
		must("up "+dev, h.LinkSetUp(link))
	}
	up(hNode, nfDev, "198.18.0.1/24")
	up(hNode, "n1", "198.18.1.1/24")
	up(hClient, "c0", nfClientAddr+"/24")
	srv := []string{nfServerAddr + "/24"}
	for _, a := range serverExtra {
		srv = append(srv, a.String()+"/32")
	}
	up(hServer, "s0", srv...)
	for _, h := range []*netlink.Handle{hNode, hClient, hServer} {
		lo, err := h.LinkByName("lo")
		must("find lo", err)
		must("up lo", h.LinkSetUp(lo))
	}
	route := func(h *netlink.Handle, dst, gw string) {
		tb.Helper()
		r := &netlink.Route{Gw: net.ParseIP(gw)}
		if dst != "" {
			_, n, err := net.ParseCIDR(dst)
			must("parse "+dst, err)
			r.Dst = n
		}
		must("route "+dst+" via "+gw, h.RouteAdd(r))
	}
	route(hClient, "", "198.18.0.1")
	route(hServer, "", "198.18.1.1")
	route(hNode, DenyRange.String(), nfServerAddr)
	must("enable forwarding in node", l.target.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0)
	}))
	return l
}

// udpProbe sends one datagram from the client to to and reports whether
// its echo came back within wait.
func (l *nfLab) udpProbe(to netip.AddrPort, wait time.Duration) (bool, error) {
	var c *net.UDPConn
	if err := l.client(func() (err error) {
		c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
		return err
	}); err != nil {
		return false, fmt.Errorf("dial udp %s: %w", to, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("cnibench-egress-probe")); err != nil {
		return false, fmt.Errorf("send to %s: %w", to, err)
	}
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return false, err
	}
	buf := make([]byte, 64)
	if _, err := c.Read(buf); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, nil
		}
		return false, fmt.Errorf("read echo from %s: %w", to, err)
	}
	return true, nil
}

// Probe waits: an echo that should come back gets up to 3 s (the first
// probe resolves neighbours); one that should not gets 300 ms.
const (
	nfArriveWait = 3 * time.Second
	nfDropWait   = 300 * time.Millisecond
)

// expect fails tb unless a probe to to arrives (want true) or not.
func (l *nfLab) expect(tb testing.TB, step string, to netip.AddrPort, want bool) {
	tb.Helper()
	wait := nfDropWait
	if want {
		wait = nfArriveWait
	}
	got, err := l.udpProbe(to, wait)
	if err != nil {
		tb.Fatalf("%s: probe %s: %v", step, to, err)
	}
	if got != want {
		verb := map[bool]string{true: "arrived", false: "was dropped"}[got]
		tb.Fatalf("%s: probe to %s %s, want the opposite", step, to, verb)
	}
}

// leftovers lists what netfilter state is left in the node namespace: any
// nftables table, any iptables-legacy rule or CNB chain, any IP set.
func (l *nfLab) leftovers(tb testing.TB) []string {
	tb.Helper()
	var left []string
	if tables, err := nfListTables(l.target); err != nil {
		tb.Fatalf("list nftables tables: %v", err)
	} else {
		for _, t := range tables {
			left = append(left, "nftables table "+t)
		}
	}
	ctx := tb.Context()
	for _, prog := range []string{"iptables-legacy-save", "ipset"} {
		args := []string{}
		if prog == "ipset" {
			args = []string{"list", "-n"}
		}
		res, err := runIn(ctx, l.target, nil, prog, args...)
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				continue
			}
			tb.Fatalf("%s: %v", prog, err)
		}
		for line := range strings.Lines(res.Stdout) {
			line = strings.TrimSpace(line)
			if prog == "ipset" && line != "" ||
				strings.HasPrefix(line, "-A ") || strings.Contains(line, "CNB") {
				left = append(left, prog+": "+line)
			}
		}
	}
	return left
}

// nfListTables names every nftables table in t's namespace.
func nfListTables(t Target) ([]string, error) {
	conn, err := nftables.New(nftables.WithNetNSFd(t.NSFd))
	if err != nil {
		return nil, err
	}
	tables, err := conn.ListTables()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, tb := range tables {
		out = append(out, fmt.Sprintf("family %d %s", tb.Family, tb.Name))
	}
	return out, nil
}
