package datapaths_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestEBPFHostRoutingRedirect proves ebpf-host-routing-redirect's path next
// to ebpf-host-routing's, on both path kinds, with TCP connections and
// pings: packets for a local pod are sent with bpf_redirect to the pod's
// host-side veth (redirect_host counted, no redirect_peer) and the host veth
// transmits them (veth_xmit: its TX counter grows by at least as much), while
// the nodes' nft forward chain and kernel conntrack see none of it. On
// ebpf-host-routing (the control) the same traffic is redirect_peer and the
// host veths transmit (almost) nothing.
func TestEBPFHostRoutingRedirect(t *testing.T) {
	const (
		redirect = "ebpf-host-routing-redirect"
		peer     = "ebpf-host-routing"
		conns    = 20
		pings    = 5
	)
	l := labtest.Up(t, lab.Options{Datapaths: []string{peer, redirect}})
	for _, name := range []string{peer, redirect} {
		if err, ok := l.Skipped()[name]; ok {
			t.Skipf("%s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		datapath string
		kind     lab.PathKind
		// wantHost: on the server's node, every packet the BPF program
		// delivers to a local pod is counted in redirect_host (else
		// redirect_peer).
		wantHost bool
	}{
		{redirect, lab.SameNode, true},
		{redirect, lab.CrossNode, true},
		{peer, lab.SameNode, false},
		{peer, lab.CrossNode, false},
	} {
		t.Run(tc.datapath+"/"+string(tc.kind), func(t *testing.T) {
			dp, topo, err := l.Datapath(tc.datapath)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := l.Endpoint(tc.datapath, tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			cr, ok := dp.(lab.CounterReporter)
			if !ok {
				t.Fatalf("%s does not report counters", tc.datapath)
			}
			srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
			before := snapshotRedirect(t, cr, topo)
			ev := lab.BeginEvidence(dp, topo)
			for range conns {
				if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, []byte("ping")); err != nil {
					t.Fatalf("TCP: %v", err)
				}
			}
			for i := range pings {
				if err := pingOnce(ep.Client, ep.ServerIP, i); err != nil {
					t.Fatalf("ping %s: %v", ep.ServerIP, err)
				}
			}
			m, warns := ev.End()
			after := snapshotRedirect(t, cr, topo)
			d := after.minus(before)
			t.Logf("BPF counter deltas %v; host veth TX deltas %v; evidence %v (warnings %q)", d.bpf, d.tx, m, warns)

			// Per connection at least SYN, ACK, data and FIN reach the
			// server pod, and SYN-ACK, data and FIN the client pod; per
			// ping one request and one reply.
			minIn := uint64(conns + pings)
			delivered := func(node int) uint64 {
				n := fmt.Sprintf("node%d.", node)
				if tc.wantHost {
					return d.bpf[n+"redirect_host"]
				}
				return d.bpf[n+"redirect_peer"]
			}
			if got := delivered(2); got < 2*minIn {
				t.Errorf("node2 delivered %d packets to pods, want >= %d: %v", got, 2*minIn, d.bpf)
			}
			if tc.kind == lab.CrossNode {
				if got := delivered(1); got < minIn {
					t.Errorf("node1 delivered %d packets to the client pod, want >= %d: %v", got, minIn, d.bpf)
				}
				if n := d.bpf["node1.redirect_neigh"] + d.bpf["node2.redirect_neigh"]; n < 2*minIn {
					t.Errorf("cross-node: %d packets through redirect_neigh, want >= %d: %v", n, 2*minIn, d.bpf)
				}
			}
			for node := 1; node <= 2; node++ {
				n := fmt.Sprintf("node%d.", node)
				other := n + "redirect_host"
				if tc.wantHost {
					other = n + "redirect_peer"
				}
				if d.bpf[other] != 0 {
					t.Errorf("%s: %d packets, want 0 on %s", other, d.bpf[other], tc.datapath)
				}
				if d.bpf[n+"drop"]+d.bpf[n+"policy_denied"] != 0 {
					t.Errorf("%s: BPF drops: %v", n, d.bpf)
				}
				// The host veths transmit what redirect_host sent them
				// (veth_xmit), and next to nothing with redirect_peer
				// (the pod's ARP for its gateway at most).
				if tc.wantHost && d.tx[node-1] < d.bpf[n+"redirect_host"] {
					t.Errorf("%s: host veths transmitted %d packets < %d redirect_host: not through veth_xmit", n, d.tx[node-1], d.bpf[n+"redirect_host"])
				}
				if !tc.wantHost && d.tx[node-1]*10 > d.bpf[n+"redirect_peer"]+10 {
					t.Errorf("%s: host veths transmitted %d packets for %d redirect_peer", n, d.tx[node-1], d.bpf[n+"redirect_peer"])
				}
			}
			for _, metric := range []string{lab.MetricNftForward, lab.MetricConntrackNew} {
				v, ok := m[metric]
				if !ok {
					t.Errorf("%s not measured (%q)", metric, warns)
				} else if v != 0 {
					t.Errorf("%s = %.0f, want 0: pod traffic crossed the nodes' netfilter", metric, v)
				}
			}
			for _, node := range topo.Nodes {
				c, err := node.ConntrackCount()
				if err != nil {
					t.Fatal(err)
				}
				if c >= conns {
					t.Errorf("%s: %d conntrack entries after %d connections: pod traffic went through the node's netfilter", node.Name, c, conns)
				}
			}
		})
	}
}

type redirectSnapshot struct {
	bpf map[string]uint64
	tx  [2]uint64 // per node, summed over the pods' host-side veths
}

func snapshotRedirect(t *testing.T, cr lab.CounterReporter, topo *lab.Topology) redirectSnapshot {
	t.Helper()
	c, err := cr.Counters()
	if err != nil {
		t.Fatal(err)
	}
	s := redirectSnapshot{bpf: c}
	for _, p := range topo.Pods {
		if p.HostDev == "" || p.Node < 0 || p.Node > 1 {
			t.Fatalf("pod %s: host device %q on node index %d", p.Role, p.HostDev, p.Node)
		}
		ls, err := topo.Nodes[p.Node].LinkStats(p.HostDev)
		if err != nil {
			t.Fatal(err)
		}
		s.tx[p.Node] += ls.TxPackets
	}
	return s
}

func (s redirectSnapshot) minus(b redirectSnapshot) redirectSnapshot {
	d := redirectSnapshot{bpf: map[string]uint64{}}
	for k, v := range s.bpf {
		d.bpf[k] = v - b.bpf[k]
	}
	for i := range s.tx {
		d.tx[i] = s.tx[i] - b.tx[i]
	}
	return d
}

// pingOnce sends one ICMP echo request from an ICMP datagram socket in
// client (the lab opens ping_group_range in pods) and waits for the reply.
func pingOnce(client *lab.NS, to netip.Addr, seq int) error {
	return client.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		if err != nil {
			return fmt.Errorf("ICMP datagram socket: %w", err)
		}
		defer unix.Close(fd)
		tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return fmt.Errorf("SO_RCVTIMEO: %w", err)
		}
		// Echo request: type 8, code 0; the kernel fills the identifier
		// and the checksum of a datagram ICMP socket.
		req := []byte{8, 0, 0, 0, 0, 0, byte(seq >> 8), byte(seq), 'c', 'n', 'b'}
		sa := &unix.SockaddrInet4{Addr: to.As4()}
		if err := unix.Sendto(fd, req, 0, sa); err != nil {
			return fmt.Errorf("send echo request: %w", err)
		}
		buf := make([]byte, 128)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				if errors.Is(err, unix.EAGAIN) {
					return errors.New("no echo reply within 2s")
				}
				return fmt.Errorf("receive echo reply: %w", err)
			}
			if n >= 8 && buf[0] == 0 && int(buf[6])<<8|int(buf[7]) == seq {
				return nil
			}
		}
	})
}
