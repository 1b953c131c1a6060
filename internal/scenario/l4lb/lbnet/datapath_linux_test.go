package lbnet_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/scenario/l4lb/lbnet"
	"github.com/cnibench/cnibench/internal/testutil"
)

// l4lbConns is how many connections each mode makes from the client.
const l4lbConns = 120

// l4lbBulkPort is the service port where the backends echo a bulk
// transfer (one of lbnet.Ports).
const l4lbBulkPort = 8080

// TestL4LB builds the l4lb lab once and proves every mode (snat/dsr/kubeproxy x
// direct/vxlan x firewall off/on), switching at run time:
//   - l4lbConns connections from the client to VIP:80 all complete an
//     exchange with a backend; both backends answer; the client's peer is
//     the VIP; the backend's peer is the LB (snat: its address, or its
//     tunnel address with vxlan) or the client itself (dsr);
//   - the LB translated the forward direction; in snat it translated the
//     replies (Reverse > 0), in dsr it saw none (Reverse == 0) while the
//     workers gave them the VIP back; in kubeproxy no program is
//     attached, the DNAT and masquerade rules counted every connection
//     and conntrack holds an entry with the VIP for each;
//   - vxlan: the LB's VXLAN device sent the packets; the workers' sent the
//     replies in snat and nothing in dsr; direct: no VXLAN device exists;
//   - the workers' programs are attached only in dsr;
//   - firewall on: every connect from clientfw times out and the
//     firewall's drop counter rises by at least the attempts, while the
//     client's connections still work; off: clientfw connects (so the drops
//     are the firewall's, not a missing route);
//   - 256 KiB echoed through the VIP arrive intact in full-size segments
//     (path MTU = the wire MTU: VXLAN needs no fragmentation);
//   - IPv6 is refused as not supported; after lab down no namespace is
//     left and the programs that were attached are gone.
func TestL4LB(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if slices.Contains(lab.Names(), lbnet.DatapathName) || lab.Describe(lbnet.DatapathName) == "" {
		t.Fatalf("l4lb must be registered hidden: in Names %v, description %q", lab.Names(), lab.Describe(lbnet.DatapathName))
	}
	// Registered before upLab's cleanup, so it runs after the lab is down
	// (cleanups run last-in first-out): every program ever attached is gone.
	var progIDs []ebpf.ProgramID
	t.Cleanup(func() { checkProgsGone(t, progIDs) })
	l := labtest.Up(t, lab.Options{Datapaths: []string{lbnet.DatapathName}})
	if err, ok := l.Skipped()[lbnet.DatapathName]; ok {
		t.Skip(err)
	}
	lb, err := lbnet.Of(l)
	if err != nil {
		t.Fatal(err)
	}
	// Negative control by construction: the LB's stack neither forwards
	// nor has a route to the backends, so only its program can take a
	// client's packet there.
	if v, err := lb.LBNode().ReadSysctl("net/ipv4/ip_forward"); err != nil || v != "0" {
		t.Errorf("LB ip_forward = %q (%v), want 0", v, err)
	}
	if r, err := lb.LBNode().Handle().RouteGet(net.IP(lbnet.BackendIPs[0].AsSlice())); err == nil {
		t.Errorf("LB has a route to a backend: %v", r)
	}
	for i, be := range lb.Backends() {
		startPeerEcho(t, be.NS, netip.AddrPortFrom(be.IP, lbnet.Port), be.Role)
		startBulkEcho(t, be.NS, netip.AddrPortFrom(be.IP, l4lbBulkPort))
		if be.Node != i || be.IP != lbnet.BackendIPs[i] {
			t.Errorf("backend %d: %+v", i, be)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := lb.Configure(ctx, lbnet.Mode{LB: lbnet.DSR, Transport: lbnet.Direct, IPv6: true}); !errors.Is(err, lab.ErrNotSupported) {
		t.Errorf("IPv6 mode: %v, want ErrNotSupported", err)
	}
	var prev []ebpf.ProgramID
	for _, m := range lbnet.Modes() {
		ok := t.Run(m.String(), func(t *testing.T) {
			if err := lb.Configure(ctx, m); err != nil {
				t.Fatal(err)
			}
			ids := checkL4LBAttachments(t, lb, m)
			// A change of LB mode or transport frees the previous programs;
			// a firewall flip keeps them.
			if m.Firewall {
				if !slices.Equal(ids, prev) {
					t.Errorf("firewall flip replaced the programs: %v -> %v", prev, ids)
				}
			} else {
				checkProgsGone(t, prev)
			}
			prev = ids
			progIDs = append(progIDs, ids...)
			proveL4LBMode(t, ctx, lb, m)
		})
		if !ok {
			break
		}
	}
}

// checkProgsGone checks that no program of ids is loaded any more (waiting
// a little: a program is freed once its last link is).
func checkProgsGone(t *testing.T, ids []ebpf.ProgramID) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for _, id := range ids {
		for {
			p, err := ebpf.NewProgramFromID(id)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("program %d: %v", id, err)
				}
				break
			}
			p.Close()
			if time.Now().After(deadline) {
				t.Errorf("program %d still loaded", id)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// proveL4LBMode runs the connections and checks the counters of one mode.
func proveL4LBMode(t *testing.T, ctx context.Context, lb *lbnet.LB, m lbnet.Mode) {
	vip := netip.AddrPortFrom(lb.VIP(), lbnet.Port)
	before, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	tunBefore := tunnelTx(t, lb)
	seen, err := connectMany(ctx, lb.Client(), vip, l4lbConns)
	if err != nil {
		t.Fatal(err)
	}
	wantPeer := lbnet.ClientIP
	if m.LB != lbnet.DSR {
		wantPeer = lbnet.NodeIP
		if m.Transport == lbnet.VXLAN {
			wantPeer = lbnet.TunnelIP
		}
	}
	for backend, peers := range seen {
		for p := range peers {
			if p != wantPeer {
				t.Errorf("backend %s saw peer %v, want %v", backend, p, wantPeer)
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("backends that answered: %v, want be1 and be2", seen)
	}
	after, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	d := diff(before, after)
	t.Logf("%v: counters %+v", m, d)
	// A connection is at least SYN, ACK, data, FIN from the client.
	if d.Forward < 4*l4lbConns || d.NewFlows < l4lbConns {
		t.Errorf("LB forward %d, new flows %d, want >= %d and >= %d", d.Forward, d.NewFlows, 4*l4lbConns, l4lbConns)
	}
	switch m.LB {
	case lbnet.SNAT:
		if d.Reverse < 3*l4lbConns || d.WorkerDNAT != 0 || d.WorkerRevNAT != 0 {
			t.Errorf("snat: LB reverse %d (want >= %d), worker DNAT/RevNAT %d/%d (want 0)", d.Reverse, 3*l4lbConns, d.WorkerDNAT, d.WorkerRevNAT)
		}
	case lbnet.KubeProxy:
		// Conntrack NAT: the rules see each connection's first packet.
		n, err := lb.ConntrackVIPEntries()
		if d.Reverse < 3*l4lbConns || d.KubeProxyDNAT < l4lbConns || d.KubeProxyMasq < l4lbConns || err != nil || n < l4lbConns {
			t.Errorf("kubeproxy: reverse %d (want >= %d), DNAT %d, masquerade %d, conntrack entries with the VIP %d (%v) (want >= %d each)",
				d.Reverse, 3*l4lbConns, d.KubeProxyDNAT, d.KubeProxyMasq, n, err, l4lbConns)
		}
	case lbnet.DSR:
		// Every packet the LB forwarded reached a worker's program: DNATed,
		// or dropped by its firewall (a straggler of clientfw's); 2 may be
		// on their way when the counters are read.
		if d.Reverse != 0 || d.WorkerRevNAT < 3*l4lbConns || d.WorkerDNAT+d.FirewallDrops+2 < d.Forward {
			t.Errorf("dsr: LB reverse %d (want 0), worker RevNAT %d (want >= %d), DNAT %d + firewall drops %d (want >= forward %d)",
				d.Reverse, d.WorkerRevNAT, 3*l4lbConns, d.WorkerDNAT, d.FirewallDrops, d.Forward)
		}
	}
	// (FirewallDrops may rise here: the previous mode's refusal probe left
	// clientfw connections closing, which a firewall just turned on cuts.)
	if d.NoBackend != 0 || d.SNATFailures != 0 {
		t.Errorf("drops on the client's connections: %+v", d)
	}
	tunAfter := tunnelTx(t, lb)
	if m.Transport == lbnet.VXLAN {
		lbTx, wTx := tunAfter[0]-tunBefore[0], tunAfter[1]+tunAfter[2]-tunBefore[1]-tunBefore[2]
		if lbTx < d.Forward/2 {
			t.Errorf("LB's VXLAN device sent %d packets for %d forwarded", lbTx, d.Forward)
		}
		if m.LB != lbnet.DSR && wTx < d.Reverse/2 {
			t.Errorf("snat+vxlan: workers' VXLAN devices sent %d packets for %d replies", wTx, d.Reverse)
		}
		// Not exactly 0: a backend socket left closing by an earlier
		// snat+vxlan mode retransmits its FIN to the LB's tunnel address,
		// which the recreated tunnel now routes again.
		if m.LB == lbnet.DSR && wTx > d.WorkerRevNAT/20 {
			t.Errorf("dsr+vxlan: workers' VXLAN devices sent %d packets for %d replies, want ~0 (replies go straight to the client)", wTx, d.WorkerRevNAT)
		}
	}
	payload := bytes.Repeat([]byte("cnibench"), 32<<10)
	if mtu, err := testutil.TCPRoundTrip(lb.Client().Do, netip.AddrPortFrom(lb.VIP(), l4lbBulkPort), payload); err != nil || mtu != lab.DefaultMTU {
		t.Errorf("bulk echo through the VIP: path MTU %d (want %d): %v", mtu, lab.DefaultMTU, err)
	}
	probe, err := lb.RefusalProbe(ctx, 600*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: refusal probe %+v", m, probe)
	if probe.Attempts == 0 {
		t.Fatal("refusal probe made no attempt")
	}
	if m.Firewall {
		if probe.Connected != 0 || probe.Reset != 0 || probe.TimedOut != probe.Attempts || probe.Drops < uint64(probe.Attempts) {
			t.Errorf("firewall on: clientfw %+v, want every attempt timed out and at least one drop each", probe)
		}
		// The allowed client still gets through with the firewall on.
		if _, err := connectMany(ctx, lb.Client(), vip, 10); err != nil {
			t.Errorf("firewall on, allowed client: %v", err)
		}
	} else if probe.Connected != probe.Attempts || probe.Drops != 0 {
		t.Errorf("firewall off: clientfw %+v, want every attempt connected and no drop", probe)
	}
}

// checkL4LBAttachments checks which TCX programs mode m has where, and
// that the VXLAN devices exist exactly with vxlan; it returns the IDs of
// the attached programs.
func checkL4LBAttachments(t *testing.T, lb *lbnet.LB, m lbnet.Mode) []ebpf.ProgramID {
	t.Helper()
	lbProgs := tcxIngress(t, lb.LBNode(), "ext0")
	if want := map[bool]int{true: 0, false: 1}[m.LB == lbnet.KubeProxy]; len(lbProgs) != want {
		t.Errorf("LB ext0: %d TCX programs, want %d", len(lbProgs), want)
	}
	ids := slices.Clone(lbProgs)
	vx := m.Transport == lbnet.VXLAN
	for _, ns := range []*lab.NS{lb.LBNode(), lb.Workers()[0], lb.Workers()[1]} {
		_, err := ns.Handle().LinkByName(lab.VXLANIf)
		if vx != (err == nil) {
			t.Errorf("%s: %s exists %v, want %v", ns.Name, lab.VXLANIf, err == nil, vx)
		}
	}
	if vx {
		p := tcxIngress(t, lb.LBNode(), lab.VXLANIf)
		if want := map[string]int{lbnet.SNAT: 1, lbnet.DSR: 0, lbnet.KubeProxy: 0}[m.LB]; len(p) != want {
			t.Errorf("LB %s: %d TCX programs, want %d", lab.VXLANIf, len(p), want)
		}
		ids = append(ids, p...)
	}
	want := 0
	if m.LB == lbnet.DSR {
		want = 1
	}
	for i, w := range lb.Workers() {
		in := "ext0"
		if vx {
			in = lab.VXLANIf
		}
		for _, dev := range []string{in, "veth-" + lbnet.BackendRoles[i], "ext0"} {
			p := tcxIngress(t, w, dev)
			if dev == "ext0" && in != "ext0" {
				if len(p) != 0 {
					t.Errorf("%s %s: %d TCX programs, want 0", w.Name, dev, len(p))
				}
				continue
			}
			if len(p) != want {
				t.Errorf("%s %s: %d TCX programs, want %d", w.Name, dev, len(p), want)
			}
			ids = append(ids, p...)
		}
	}
	return ids
}

func tcxIngress(t *testing.T, ns *lab.NS, dev string) []ebpf.ProgramID {
	t.Helper()
	var ids []ebpf.ProgramID
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		r, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return err
		}
		for _, p := range r.Programs {
			ids = append(ids, p.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("query TCX ingress of %s: %v", dev, err)
	}
	return ids
}

// tunnelTx returns the TX packets of the VXLAN devices of the LB and the
// two workers (0 where there is none).
func tunnelTx(t *testing.T, lb *lbnet.LB) [3]uint64 {
	t.Helper()
	var out [3]uint64
	for i, ns := range []*lab.NS{lb.LBNode(), lb.Workers()[0], lb.Workers()[1]} {
		if s, err := ns.LinkStats(lab.VXLANIf); err == nil {
			out[i] = s.TxPackets
		}
	}
	return out
}

func diff(a, b lbnet.Counters) lbnet.Counters {
	return lbnet.Counters{
		Forward: b.Forward - a.Forward, Reverse: b.Reverse - a.Reverse, NewFlows: b.NewFlows - a.NewFlows,
		NoBackend: b.NoBackend - a.NoBackend, SNATFailures: b.SNATFailures - a.SNATFailures,
		WorkerDNAT: b.WorkerDNAT - a.WorkerDNAT, WorkerRevNAT: b.WorkerRevNAT - a.WorkerRevNAT,
		FirewallDrops: b.FirewallDrops - a.FirewallDrops,
		KubeProxyDNAT: b.KubeProxyDNAT - a.KubeProxyDNAT, KubeProxyMasq: b.KubeProxyMasq - a.KubeProxyMasq,
	}
}

// startBulkEcho echoes every connection to addr in ns.
func startBulkEcho(t *testing.T, ns *lab.NS, addr netip.AddrPort) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", addr.String())
		return err
	}); err != nil {
		t.Fatalf("listen on %v: %v", addr, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.Copy(c, c)
			})
		}
	})
}

// startPeerEcho listens on addr in ns and answers each line with
// "NAME PEER-ADDRESS" (the address the backend sees the client as).
func startPeerEcho(t *testing.T, ns *lab.NS, addr netip.AddrPort, name string) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", addr.String())
		return err
	}); err != nil {
		t.Fatalf("listen on %v: %v", addr, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					peer := netip.MustParseAddrPort(c.RemoteAddr().String()).Addr()
					if _, err := fmt.Fprintf(c, "%s %s\n", name, peer); err != nil {
						return
					}
				}
			})
		}
	})
}

// connectMany makes n connections from ns to to (8 at a time), each a
// one-line exchange, and returns which backend answered and the peers it
// saw. Any failure, or a connection whose peer is not to, is an error.
func connectMany(ctx context.Context, ns *lab.NS, to netip.AddrPort, n int) (map[string]map[netip.Addr]bool, error) {
	var (
		mu   sync.Mutex
		seen = map[string]map[netip.Addr]bool{}
		errs []error
		wg   sync.WaitGroup
		work = make(chan int)
	)
	for range 8 {
		wg.Go(func() {
			for range work {
				name, peer, err := exchange(ctx, ns, to)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					if seen[name] == nil {
						seen[name] = map[netip.Addr]bool{}
					}
					seen[name][peer] = true
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		return seen, fmt.Errorf("%d of %d connections failed, first: %w", len(errs), n, errs[0])
	}
	return seen, nil
}

func exchange(ctx context.Context, ns *lab.NS, to netip.AddrPort) (string, netip.Addr, error) {
	var c net.Conn
	err := ns.Do(func() (err error) {
		d := net.Dialer{Timeout: 3 * time.Second}
		c, err = d.DialContext(ctx, "tcp4", to.String())
		return err
	})
	if err != nil {
		return "", netip.Addr{}, err
	}
	defer c.Close()
	if got := netip.MustParseAddrPort(c.RemoteAddr().String()); got != to {
		return "", netip.Addr{}, fmt.Errorf("connected to %v, peer is %v", to, got)
	}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", netip.Addr{}, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("read reply: %w", err)
	}
	name, peer, ok := strings.Cut(strings.TrimSpace(line), " ")
	p, perr := netip.ParseAddr(peer)
	if !ok || perr != nil {
		return "", netip.Addr{}, fmt.Errorf("reply %q", line)
	}
	return name, p, nil
}
