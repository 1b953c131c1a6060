package datapaths_test

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestConntrackEngaged proves that every legacy datapath tracks pod
// connections in its nodes, same-node ones included (bridged traffic through
// br_netfilter), and that each NOTRACK variant tracks none.
func TestConntrackEngaged(t *testing.T) {
	tracked := map[string]bool{
		"veth-routing": true, "veth-routing-notrack": false,
		"bridge": true, "bridge-notrack": false,
		"vxlan": true, "vxlan-notrack": false,
	}
	var names []string
	for n := range tracked {
		names = append(names, n)
	}
	l := labtest.Up(t, lab.Options{Datapaths: names})
	const conns = 20
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dp, topo, err := l.Datapath(name)
			if err != nil {
				t.Fatal(err)
			}
			if c := dp.(lab.Claimer).Claims(); c.Conntrack != tracked[name] {
				t.Errorf("claims conntrack=%v, want %v", c.Conntrack, tracked[name])
			}
			for _, kind := range []lab.PathKind{lab.CrossNode, lab.SameNode} {
				ep, err := l.Endpoint(name, kind)
				if err != nil {
					t.Fatal(err)
				}
				before, err := lab.NftCounters(topo.Nodes[1])
				if err != nil {
					t.Fatal(err)
				}
				srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
				for range conns {
					if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, []byte("ping")); err != nil {
						t.Fatalf("%s: %v", kind, err)
					}
				}
				after, err := lab.NftCounters(topo.Nodes[1])
				if err != nil {
					t.Fatal(err)
				}
				inserts := after[lab.RuleCtNew] - before[lab.RuleCtNew]
				t.Logf("%s: node2 forwarded %d packets in conntrack state new for %d connections", kind, inserts, conns)
				if tracked[name] && inserts < conns {
					t.Errorf("%s: node2 inserted %d conntrack entries for %d connections (conntrack not engaged)", kind, inserts, conns)
				}
				if !tracked[name] && inserts > 0 {
					t.Errorf("%s: node2 inserted %d conntrack entries, want 0 (NOTRACK)", kind, inserts)
				}
			}
			n := 0
			for _, node := range topo.Nodes {
				n += podConntrackEntries(t, node)
			}
			if tracked[name] && n < 2*conns {
				t.Errorf("%d pod-to-pod conntrack entries in the nodes after %d connections per path", n, conns)
			}
			if !tracked[name] && n > 0 {
				t.Errorf("%d pod-to-pod conntrack entries in the nodes, want 0 (NOTRACK)", n)
			}
			ctr, err := lab.NftCounters(topo.Nodes[1])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("node2 nft counters %v", ctr)
			if tracked[name] && ctr[lab.RuleEstablished] == 0 {
				t.Error("ct established rule never matched")
			}
			if !tracked[name] && ctr[lab.RuleNotrack] == 0 {
				t.Error("notrack rule never matched")
			}
		})
	}
}

// podFlow matches a conntrack entry whose original direction is pod to pod.
var podFlow = regexp.MustCompile(`src=198\.19\.\S+ dst=198\.19\.`)

// podConntrackEntries counts the pod-to-pod entries of ns's conntrack table
// (the bridges' own IGMP reports are tracked in every variant).
func podConntrackEntries(t *testing.T, ns *lab.NS) int {
	t.Helper()
	var b []byte
	err := ns.Do(func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/nf_conntrack")
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("conntrack table of %s: %v", ns.Name, err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if podFlow.MatchString(line) {
			n++
		}
	}
	return n
}
