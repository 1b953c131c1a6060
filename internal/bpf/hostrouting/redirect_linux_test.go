//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package hostrouting

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/testutil"
)

// hookTable counts, in a node, pod-to-pod packets at every IPv4 netfilter
// hook of the node's IP stack: prerouting, forward, postrouting (and input,
// output: none expected either way). Its chains only count, so they change
// no verdict; the conntrack hooks they do not register are registered by
// the forward chain of newNode (ct state), so conntrack is live in the node.
const hookTable = "cnbhooks"

func (n *node) addHookCounters(t *testing.T) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "table ip %s {\n", hookTable)
	for _, h := range []string{"prerouting", "input", "forward", "output", "postrouting"} {
		fmt.Fprintf(&b, "\tcounter %s { }\n", h)
		fmt.Fprintf(&b, "\tchain %s { type filter hook %s priority -300; policy accept; ip saddr 198.18.0.0/16 ip daddr 198.18.0.0/16 counter name %q; }\n", h, h, h)
	}
	b.WriteString("}\n")
	n.run(t, b.String(), "nft", "-f", "-")
}

// hookCounts reads the counters of addHookCounters.
func (n *node) hookCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, h := range []string{"prerouting", "input", "forward", "output", "postrouting"} {
		o := n.run(t, "", "nft", "list", "counter", "ip", hookTable, h)
		i := strings.Index(o, "packets ")
		if i < 0 {
			t.Fatalf("%s: no packets in nft counter %s: %s", n.name, h, o)
		}
		f := strings.Fields(o[i+len("packets "):])
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: nft counter %s: %v", n.name, h, err)
		}
		out[h] = v
	}
	return out
}

// conntrackCount reads nf_conntrack_count inside n.
func (n *node) conntrackCount(t *testing.T) int {
	t.Helper()
	var v int
	err := runInNS(n.h, func() error {
		b, err := os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_count")
		if err != nil {
			return err
		}
		v, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	if err != nil {
		t.Fatalf("%s: conntrack count: %v", n.name, err)
	}
	return v
}

// hostVethTx sums the transmitted (and transmit-dropped) packets of n's
// host-side pod veths: a packet sent with bpf_redirect to their egress goes
// through veth_xmit and is counted there; one sent with bpf_redirect_peer
// is not (it enters the pod's eth0 directly).
func (n *node) hostVethTx(t *testing.T) uint64 {
	t.Helper()
	var sum uint64
	for _, p := range n.pods {
		l, err := n.nl.LinkByIndex(p.hostIdx)
		if err != nil {
			t.Fatalf("%s: %s: %v", n.name, p.hostIf, err)
		}
		s := l.Attrs().Statistics
		if s == nil {
			t.Fatalf("%s: %s: no link statistics", n.name, p.hostIf)
		}
		sum += s.TxPackets + s.TxDropped
	}
	return sum
}

// TestRedirectHost: with Options.RedirectHost, packets for a local pod go
// to the egress of its host-side veth (bpf_redirect, Calico eBPF style):
// the host veths transmit them (veth_xmit, then the pod's backlog), no
// packet is redirected with redirect_peer, and the node's netfilter hooks
// (the IPv4 ones, and even the netdev egress hook of the host veths, which
// the kernel skips for a packet redirected from tc ingress) and conntrack
// see none of the pods' packets, as with redirect_peer. The
// redirect_peer program on the same lab is the control: its host veths
// transmit almost nothing.
func TestRedirectHost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		crossNode bool
		host      bool
	}{
		{name: "same-node/host", host: true},
		{name: "cross-node/host", crossNode: true, host: true},
		{name: "same-node/peer"},
		{name: "cross-node/peer", crossNode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.SkipUnlessRoot(t)
			skipUnlessTool(t, "nft", "nsenter")
			l := &lab{prefix: testPrefix(t)}
			n1 := l.newNode(t, "n1", "198.18.1.0/24")
			nodes := []*node{n1}
			a1 := l.newPod(t, n1, "a1", "198.18.1.10", "cnbh1")
			var b1 *pod
			if tc.crossNode {
				n2 := l.newNode(t, "n2", "198.18.2.0/24")
				l.connectNodes(t, n1, n2)
				b1 = l.newPod(t, n2, "b1", "198.18.2.10", "cnbh1")
				nodes = append(nodes, n2)
			} else {
				b1 = l.newPod(t, n1, "a2", "198.18.1.11", "cnbh2")
			}
			progs := make([]*Program, len(nodes))
			txBefore := make([]uint64, len(nodes))
			for i, n := range nodes {
				n.addHookCounters(t)
				n.addEgressCounters(t)
				progs[i] = attachWith(t, n, false, Options{RedirectHost: tc.host})
				if progs[i].RedirectHost() != tc.host {
					t.Fatalf("RedirectHost() = %v, want %v", progs[i].RedirectHost(), tc.host)
				}
				txBefore[i] = n.hostVethTx(t)
			}

			const size = 1 << 20
			tcpExchange(t, a1, b1, 8080, size)
			tcpExchange(t, b1, a1, 8081, size)

			for i, n := range nodes {
				c, err := progs[i].Counters()
				if err != nil {
					t.Fatalf("%s: counters: %v", n.name, err)
				}
				tx := n.hostVethTx(t) - txBefore[i]
				hooks := n.hookCounts(t)
				ct := n.conntrackCount(t)
				eg := n.egressCount(t)
				t.Logf("%s: %+v; host veths transmitted %d; netfilter hooks %v; conntrack entries %d; netdev egress hook on host veths %d", n.name, c, tx, hooks, ct, eg)
				delivered := c.RedirectPeer
				if tc.host {
					delivered = c.RedirectHost
					if c.RedirectPeer != 0 {
						t.Errorf("%s: %d packets with redirect_peer, want 0 with RedirectHost", n.name, c.RedirectPeer)
					}
					if tx < c.RedirectHost {
						t.Errorf("%s: host veths transmitted %d packets < %d redirect_host: not through veth_xmit", n.name, tx, c.RedirectHost)
					}
				} else {
					if c.RedirectHost != 0 {
						t.Errorf("%s: %d packets with redirect_host on a redirect_peer program", n.name, c.RedirectHost)
					}
					if tx*10 > c.RedirectPeer {
						t.Errorf("%s: host veths transmitted %d packets for %d redirect_peer: peer redirect went through veth_xmit?", n.name, tx, c.RedirectPeer)
					}
				}
				if delivered == 0 {
					t.Errorf("%s: no packet delivered to a pod by the program: %+v", n.name, c)
				}
				if tc.crossNode && c.RedirectNeigh == 0 {
					t.Errorf("%s: cross-node traffic without redirect_neigh: %+v", n.name, c)
				}
				if !tc.crossNode && c.RedirectNeigh != 0 {
					t.Errorf("%s: same-node traffic took redirect_neigh: %+v", n.name, c)
				}
				if c.Drop+c.PolicyDenied != 0 {
					t.Errorf("%s: drops: %+v", n.name, c)
				}
				for h, v := range hooks {
					if v != 0 {
						t.Errorf("%s: %d pod packets at the node's netfilter %s hook, want 0 (bypass)", n.name, v, h)
					}
				}
				if fwd := n.nftCounter(t, "fwd_pkts"); fwd != 0 {
					t.Errorf("%s: FORWARD counter = %d, want 0", n.name, fwd)
				}
				if eg != 0 {
					t.Errorf("%s: %d pod packets at the netdev egress hook of the host veths, want 0", n.name, eg)
				}
				if ct != 0 {
					t.Errorf("%s: %d kernel conntrack entries, want 0 (bypass)", n.name, ct)
				}
			}

			// Negative control for the hook counters: without the
			// programs the same traffic crosses prerouting, forward and
			// postrouting.
			for _, p := range progs {
				if err := p.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
			}
			tcpExchange(t, a1, b1, 8082, 64<<10)
			for _, n := range nodes {
				hooks := n.hookCounts(t)
				for _, h := range []string{"prerouting", "forward", "postrouting"} {
					if hooks[h] == 0 {
						t.Errorf("%s: negative control: %s hook counted nothing without the program (%v)", n.name, h, hooks)
					}
				}
				if eg := n.egressCount(t); eg == 0 {
					t.Errorf("%s: negative control: the host veths' netdev egress hook counted nothing without the program", n.name)
				}
			}
		})
	}
}

// addEgressCounters counts pod packets at the netdev egress hook of n's
// host-side pod veths (nftables' per-device egress hook, which
// dev_queue_xmit runs).
func (n *node) addEgressCounters(t *testing.T) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "table netdev %s {\n\tcounter eg { }\n", hookTable)
	for _, p := range n.pods {
		fmt.Fprintf(&b, "\tchain eg_%s { type filter hook egress device %q priority 0; policy accept; ip saddr 198.18.0.0/16 counter name \"eg\"; }\n", p.hostIf, p.hostIf)
	}
	b.WriteString("}\n")
	n.run(t, b.String(), "nft", "-f", "-")
}

func (n *node) egressCount(t *testing.T) uint64 {
	t.Helper()
	o := n.run(t, "", "nft", "list", "counter", "netdev", hookTable, "eg")
	i := strings.Index(o, "packets ")
	if i < 0 {
		t.Fatalf("%s: no packets in nft counter eg: %s", n.name, o)
	}
	v, err := strconv.ParseUint(strings.Fields(o[i+len("packets "):])[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: nft counter eg: %v", n.name, err)
	}
	return v
}
