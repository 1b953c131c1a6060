package datapaths_test

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/datapaths"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestBaselineConntrackRegistered checks that the baseline's conntrack
// variants are listed, opt-in (not in the default matrix) and claim the
// conntrack state they are built for.
func TestBaselineConntrackRegistered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conntrack bool
	}{
		{datapaths.BaselineConntrack, true},
		{datapaths.BaselineConntrackNotrack, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Contains(lab.Names(), tc.name) {
				t.Fatalf("%s not in lab.Names() %v", tc.name, lab.Names())
			}
			if !lab.OptIn(tc.name) {
				t.Errorf("%s is in the default matrix; want opt-in", tc.name)
			}
			dp, err := lab.NewDatapath(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := dp.(lab.Claimer)
			if !ok {
				t.Fatalf("%s states no path claims", tc.name)
			}
			if got := c.Claims(); got.Conntrack != tc.conntrack || !got.NftForward || got.BPF || got.VXLAN {
				t.Errorf("claims %+v, want conntrack=%v with the lab's nft table", got, tc.conntrack)
			}
		})
	}
}

// TestBaselineConntrackPathProof brings up baseline and its two conntrack
// variants and proves, through the evidence the suite records around every
// repeat, that baseline-conntrack tracks every node-to-node connection
// (conntrack_new_packets, conntrack_entries), that the notrack variant and
// the plain baseline track none, that CheckPath finds each on its claimed
// path, and that the host firewall is real: a port below the test ports is
// dropped on both variants and reachable on the baseline.
func TestBaselineConntrackPathProof(t *testing.T) {
	names := []string{"baseline", datapaths.BaselineConntrack, datapaths.BaselineConntrackNotrack}
	l := labtest.Up(t, lab.Options{Datapaths: names})
	const conns = 20
	for _, tc := range []struct {
		name     string
		tracked  bool
		firewall bool
	}{
		{"baseline", false, false},
		{datapaths.BaselineConntrack, true, true},
		{datapaths.BaselineConntrackNotrack, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err, ok := l.Skipped()[tc.name]; ok {
				testutil.SkipIfNotSupported(t, err, lab.ErrNotSupported)
				t.Fatalf("%s skipped: %v", tc.name, err)
			}
			dp, topo, err := l.Datapath(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := l.Endpoint(tc.name, lab.NodeToNode)
			if err != nil {
				t.Fatal(err)
			}
			srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
			udp := testutil.StartUDPEcho(t, ep.Server.Do, ep.ServerIP)
			ev := lab.BeginEvidence(dp, topo)
			for range conns {
				if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, []byte("ping")); err != nil {
					t.Fatalf("TCP: %v", err)
				}
			}
			if err := testutil.UDPRoundTripDF(ep.Client.Do, udp, 1000); err != nil {
				t.Fatalf("UDP: %v", err)
			}
			m, warns := ev.End()
			t.Logf("evidence %v", m)
			for _, w := range warns {
				t.Errorf("evidence warning: %s", w)
			}
			for _, w := range lab.CheckPath(tc.name, lab.NodeToNode, m) {
				t.Errorf("path check: %s", w)
			}
			if n := m[lab.MetricConntrackEntries]; tc.tracked && n < conns {
				t.Errorf("%s = %.0f after %d connections, want >= %d", lab.MetricConntrackEntries, n, conns, conns)
			} else if !tc.tracked && n != 0 {
				t.Errorf("%s = %.0f, want 0 (conntrack not engaged or bypassed)", lab.MetricConntrackEntries, n)
			}
			if tc.firewall {
				// Both nodes see each connection's first packet: node1 in
				// output, node2 in input.
				if n := m[lab.MetricConntrackNew]; tc.tracked && n < 2*conns {
					t.Errorf("%s = %.0f for %d connections, want >= %d", lab.MetricConntrackNew, n, conns, 2*conns)
				} else if !tc.tracked && n != 0 {
					t.Errorf("%s = %.0f, want 0 (NOTRACK)", lab.MetricConntrackNew, n)
				}
				c, err := lab.NftCounters(topo.Nodes[1])
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("node2 nft counters %v", c)
				if tc.tracked && c[datapaths.RuleHostEstablished] == 0 {
					t.Error("node2: the ct established rule never matched")
				}
				if !tc.tracked && (c[datapaths.RuleNotrackNode] == 0 || c[datapaths.RuleHostTestPorts] == 0) {
					t.Error("node2: the notrack or test-port rule never matched")
				}
			}
			// Port 80 is below the test ports: the firewall drops it.
			low := netip.AddrPortFrom(ep.ServerIP, 80)
			var ln net.Listener
			if err := ep.Server.Do(func() (err error) { ln, err = net.Listen("tcp4", low.String()); return err }); err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			err = ep.Client.Do(func() error {
				c, err := (&net.Dialer{Timeout: 300 * time.Millisecond}).Dial("tcp4", low.String())
				if err == nil {
					c.Close()
				}
				return err
			})
			if tc.firewall && err == nil {
				t.Errorf("connected to %s through the host firewall, want dropped", low)
			}
			if !tc.firewall && err != nil {
				t.Errorf("baseline: connect to %s: %v", low, err)
			}
		})
	}
}
