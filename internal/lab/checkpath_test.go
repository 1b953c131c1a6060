package lab

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func TestCheckClaims(t *testing.T) {
	tracked := PathClaims{Conntrack: true, NftForward: true}
	notrack := PathClaims{NftForward: true}
	ebpf := PathClaims{BPF: true, NftForward: true}
	vxlan := PathClaims{Conntrack: true, NftForward: true, VXLAN: true}
	for _, tc := range []struct {
		name   string
		claims PathClaims
		kind   PathKind
		m      map[string]float64
		want   []string // substrings, one per warning; nil: no warning
	}{
		{"conntrack engaged", tracked, CrossNode, map[string]float64{MetricConntrackNew: 3}, nil},
		{"conntrack not engaged", tracked, CrossNode, map[string]float64{MetricConntrackNew: 0}, []string{"conntrack not engaged"}},
		{"notrack clean", notrack, SameNode, map[string]float64{MetricConntrackNew: 0}, nil},
		{"notrack tracked", notrack, SameNode, map[string]float64{MetricConntrackNew: 2}, []string{"NOTRACK"}},
		{"conntrack unmeasured", tracked, CrossNode, map[string]float64{}, []string{"not measured: conntrack_new_packets"}},
		{"ebpf redirected", ebpf, CrossNode, map[string]float64{MetricBPFRedirectPeer: 10, MetricBPFRedirectNeigh: 10, MetricNftForward: 0, MetricConntrackNew: 0}, nil},
		{"ebpf nothing redirected", ebpf, CrossNode, map[string]float64{MetricBPFRedirectPeer: 0, MetricBPFRedirectNeigh: 0, MetricNftForward: 0, MetricConntrackNew: 0},
			[]string{"redirected no packet"}},
		{"ebpf through forward chain", ebpf, CrossNode, map[string]float64{MetricBPFRedirectPeer: 5, MetricBPFRedirectNeigh: 5, MetricNftForward: 7, MetricConntrackNew: 1},
			[]string{"nft forward chain", "kernel conntrack"}},
		{"ebpf policy drops", ebpf, CrossNode, map[string]float64{MetricBPFRedirectPeer: 5, MetricBPFRedirectNeigh: 5, MetricNftForward: 0, MetricConntrackNew: 0, MetricBPFPolicyDenied: 3},
			[]string{"dropped 3 packets"}},
		{"vxlan cross-node", vxlan, CrossNode, map[string]float64{MetricConntrackNew: 1, MetricVXLANTx: 100}, nil},
		{"vxlan not used", vxlan, CrossNode, map[string]float64{MetricConntrackNew: 1, MetricVXLANTx: 0}, []string{"VXLAN"}},
		{"vxlan same-node needs no tunnel", vxlan, SameNode, map[string]float64{MetricConntrackNew: 1, MetricVXLANTx: 0}, nil},
		{"conntrack drops", tracked, CrossNode, map[string]float64{MetricConntrackNew: 1, MetricConntrackDrops: 4}, []string{"conntrack dropped 4"}},
		{"baseline claims nothing", PathClaims{}, NodeToNode, map[string]float64{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkClaims("dp", tc.kind, tc.claims, tc.m)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

const ctStatsSample = `entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
00000004  00000000 00000000 00000000 00000003 00000000 00000000 00000000 00000010 00000001 00000002 00000000 00000000  00000000 00000000 00000000 00000000
00000004  00000000 00000000 00000000 00000001 00000000 00000000 00000000 0000000a 00000000 00000000 00000005 00000000  00000000 00000000 00000000 00000000
`

func TestParseCTStats(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     CTStats
		err      string
	}{
		{name: "two cpus", in: ctStatsSample, want: CTStats{Insert: 26, InsertFailed: 1, Drop: 2, EarlyDrop: 5, Invalid: 4}},
		{name: "header only", in: strings.SplitN(ctStatsSample, "\n", 2)[0], err: "1 lines"},
		{name: "missing column", in: "entries insert\n1 2\n", err: `no "insert_failed" column`},
		{name: "short line", in: strings.Replace(ctStatsSample, " 00000000\n", "\n", 1), err: "fields"},
		{name: "not hex", in: strings.Replace(ctStatsSample, "00000010", "0000zz10", 1), err: "insert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCTStats(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseCTStats(f *testing.F) {
	f.Add(ctStatsSample)
	f.Add("entries insert insert_failed drop early_drop invalid\n0 1 2 3 4 5\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseCTStats(s) // must not panic
	})
}

// TestEvidenceMetricsDocumented: every evidence metric is in result.Metrics
// (and so documented in docs/results.md).
func TestEvidenceMetricsDocumented(t *testing.T) {
	names := []string{MetricConntrackEntries, MetricConntrackNew, MetricConntrackDrops, MetricConntrackInvalid,
		MetricNftForward, MetricVXLANTx, MetricWireTxPackets, MetricWireTxBytes}
	for _, n := range bpfCounterMetrics {
		names = append(names, n)
	}
	for _, n := range names {
		if _, ok := result.Metrics[n]; !ok {
			t.Errorf("evidence metric %s is not in result.Metrics", n)
		}
	}
}

func TestCheckWireFrames(t *testing.T) {
	nic, veth := &Topology{Wire: WireNIC}, &Topology{Wire: WireVeth}
	for _, tc := range []struct {
		name string
		topo *Topology
		m    map[string]float64
		warn bool
	}{
		{"nic segmented", nic, map[string]float64{MetricWireTxPackets: 100, MetricWireTxBytes: 100 * 1514}, false},
		{"nic not segmented", nic, map[string]float64{MetricWireTxPackets: 10, MetricWireTxBytes: 10 * 30000}, true},
		{"veth large frames", veth, map[string]float64{MetricWireTxPackets: 10, MetricWireTxBytes: 10 * 30000}, false},
		{"nothing sent", nic, map[string]float64{MetricWireTxPackets: 0, MetricWireTxBytes: 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkWireFrames(tc.topo, 1500, tc.m); (got != "") != tc.warn {
				t.Errorf("warning %q, want warning: %v", got, tc.warn)
			}
		})
	}
}
