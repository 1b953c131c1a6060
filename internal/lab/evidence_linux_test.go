package lab_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestEvidence runs connections through every pod datapath, records the
// evidence around them and checks that each took its claimed path (no
// CheckPath warning), that the evidence of a conntrack datapath fails the
// claims of its NOTRACK variant (the check bites on real counters), and
// that the eBPF datapath's BPF CT map fills (and the bare one's does not
// exist in use).
func TestEvidence(t *testing.T) {
	names := []string{"baseline", "veth-routing", "veth-routing-notrack", "bridge", "bridge-notrack", "vxlan", "vxlan-notrack",
		"ebpf-host-routing", "ebpf-host-routing-bare"}
	l := labtest.Up(t, lab.Options{Datapaths: names})
	const conns = 5
	payload := bytes.Repeat([]byte("x"), 64<<10)
	for _, name := range l.Datapaths() {
		t.Run(name, func(t *testing.T) {
			dp, topo, err := l.Datapath(name)
			if err != nil {
				t.Fatal(err)
			}
			kinds := []lab.PathKind{lab.CrossNode, lab.SameNode}
			if name == "baseline" {
				kinds = []lab.PathKind{lab.NodeToNode}
			}
			for _, kind := range kinds {
				ep, err := l.Endpoint(name, kind)
				if err != nil {
					t.Fatal(err)
				}
				srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
				ev := lab.BeginEvidence(dp, topo)
				for range conns {
					if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, payload); err != nil {
						t.Fatalf("%s: %v", kind, err)
					}
				}
				m, warns := ev.End()
				t.Logf("%s: %v", kind, m)
				if len(warns) > 0 {
					t.Errorf("%s: evidence warnings %q", kind, warns)
				}
				if w := lab.CheckPath(name, kind, m); len(w) > 0 {
					t.Errorf("%s: %q", kind, w)
				}
				for _, want := range []string{lab.MetricWireTxPackets, lab.MetricConntrackEntries, lab.MetricConntrackDrops} {
					if _, ok := m[want]; !ok {
						t.Errorf("%s: no %s", kind, want)
					}
				}
				if kind == lab.CrossNode && m[lab.MetricWireTxPackets] == 0 {
					t.Errorf("%s: nothing crossed the wire", kind)
				}
				if name == "veth-routing" {
					if w := lab.CheckPath("veth-routing-notrack", kind, m); len(w) == 0 {
						t.Errorf("%s: veth-routing's evidence passes the NOTRACK claims", kind)
					}
				}
				if slices.Contains([]string{"vxlan", "vxlan-notrack"}, name) && kind == lab.CrossNode && m[lab.MetricVXLANTx] < conns {
					t.Errorf("%s: %v VXLAN packets sent", kind, m[lab.MetricVXLANTx])
				}
			}
			if ct, ok := dp.(interface{ CTEntries() ([2]int, error) }); ok {
				n, err := ct.CTEntries()
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("BPF CT entries per node: %v", n)
				if name == "ebpf-host-routing" && (n[0] < conns || n[1] < 2*conns) {
					t.Errorf("BPF CT map entries %v after %d connections per path: want >= %d on node1, >= %d on node2", n, conns, conns, 2*conns)
				}
				if name == "ebpf-host-routing-bare" && n != [2]int{} {
					t.Errorf("bare program filled its CT map: %v", n)
				}
			}
		})
	}
}
