package lab_test

import (
	"bytes"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestWireModes proves what the NIC-like wire does: on a bare veth wire,
// TCP crosses between the nodes in GSO packets far above the MTU; on the
// NIC-like wire every packet on the wire fits the MTU (segmented by the
// sender's wire device) and the receiving node merges them again with GRO
// (it forwards packets larger than the MTU to the pod).
func TestWireModes(t *testing.T) {
	for _, tc := range []struct {
		wire     string
		datapath string
	}{
		{lab.WireVeth, "veth-routing"},
		{lab.WireNIC, "veth-routing"},
		{lab.WireNIC, "vxlan"},
	} {
		t.Run(tc.wire+"/"+tc.datapath, func(t *testing.T) {
			l := labtest.Up(t, lab.Options{Datapaths: []string{tc.datapath}, Wire: tc.wire})
			if st := l.State(); st.Wire != tc.wire {
				t.Errorf("state records wire %q, want %q", st.Wire, tc.wire)
			}
			_, topo, err := l.Datapath(tc.datapath)
			if err != nil {
				t.Fatal(err)
			}
			if topo.Wire != tc.wire {
				t.Errorf("topology wire %q, want %q", topo.Wire, tc.wire)
			}
			feats, err := topo.Nodes[0].Features(lab.WireIf)
			if err != nil {
				t.Fatal(err)
			}
			nic := tc.wire == lab.WireNIC
			if feats["tx-tcp-segmentation"] == nic || feats["rx-gro"] != nic {
				t.Errorf("wire features tx-tcp-segmentation=%v rx-gro=%v in %s mode", feats["tx-tcp-segmentation"], feats["rx-gro"], tc.wire)
			}
			ep, err := l.Endpoint(tc.datapath, lab.CrossNode)
			if err != nil {
				t.Fatal(err)
			}
			srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
			wire0, err := topo.Nodes[0].LinkStats(lab.WireIf)
			if err != nil {
				t.Fatal(err)
			}
			pod0, err := topo.Nodes[1].LinkStats("veth-" + lab.RoleServer)
			if err != nil {
				t.Fatal(err)
			}
			payload := bytes.Repeat([]byte("cnibench"), 512<<10) // 4 MiB
			if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, payload); err != nil {
				t.Fatal(err)
			}
			wire1, _ := topo.Nodes[0].LinkStats(lab.WireIf)
			pod1, _ := topo.Nodes[1].LinkStats("veth-" + lab.RoleServer)
			wireAvg := float64(wire1.TxBytes-wire0.TxBytes) / float64(wire1.TxPackets-wire0.TxPackets)
			podAvg := float64(pod1.TxBytes-pod0.TxBytes) / float64(pod1.TxPackets-pod0.TxPackets)
			frame := float64(lab.DefaultMTU + 14)
			t.Logf("%s: node1 %s sent %d packets, %.0f bytes each; node2 sent %d packets of %.0f bytes to the server pod",
				tc.wire, lab.WireIf, wire1.TxPackets-wire0.TxPackets, wireAvg, pod1.TxPackets-pod0.TxPackets, podAvg)
			if nic && wireAvg > frame {
				t.Errorf("NIC-like wire carried packets of %.0f bytes on average, above the %0.f-byte frame", wireAvg, frame)
			}
			if !nic && wireAvg <= frame {
				t.Errorf("bare veth wire carried packets of %.0f bytes on average: expected GSO packets above the MTU", wireAvg)
			}
			if nic && podAvg <= 2*frame {
				t.Errorf("node2 forwarded packets of %.0f bytes on average to the pod: GRO did not merge the wire's packets", podAvg)
			}
		})
	}
}
