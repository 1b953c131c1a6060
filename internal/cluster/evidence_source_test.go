package cluster

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// TestEvidenceCheckSource: a pod path is judged by the run's pods'
// counters only, the node-to-node path by the nodes', labelled node-wide.
func TestEvidenceCheckSource(t *testing.T) {
	m := func(podSyn, podPaws, nodeSyn, nodePaws float64) map[string]float64 {
		return map[string]float64{MetricPodsSynRetransmits: podSyn, MetricPodsPAWSTimewait: podPaws,
			MetricNodesSynRetransmits: nodeSyn, MetricNodesPAWSTimewait: nodePaws}
	}
	tests := []struct {
		name    string
		path    string
		metrics map[string]float64
		want    []string // substrings of the one warning; nil: none
	}{
		{"pods' retransmissions", PathCrossNode, m(3, 2, 7, 1),
			[]string{"cross-node: 3 SYN(s) retransmitted during the cell, in the run's own pods' network namespaces (cli-a, srv-a, srv-b)", "2 segment(s) refused by TIME_WAIT"}},
		{"other workloads' retransmissions on the nodes do not count for a pod path", PathHairpin, m(0, 0, 9, 4), nil},
		{"node-to-node is judged node-wide", PathNodeToNode, m(3, 0, 2, 0),
			[]string{"node-to-node: 2 SYN(s) retransmitted during the cell, node-wide, in the namespaces of nodes' host pods host-a and host-b, so other host-network workloads' count too"}},
		{"node-to-node ignores the pods", PathNodeToNode, m(5, 5, 0, 0), nil},
		{"nothing", PathSameNode, map[string]float64{}, nil},
		{"the cost said as measured: the slowest connect", PathCrossNode,
			map[string]float64{MetricPodsSynRetransmits: 84, MetricPodsPAWSTimewait: 84, result.ConnectUsMax: 15466.5},
			[]string{"cross-node: 84 SYN(s) retransmitted", "84 segment(s) refused by TIME_WAIT", "the slowest connect took 15.5 ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := (&evidence{}).Check(tt.path, tt.metrics)
			if tt.want == nil {
				if w != nil {
					t.Errorf("warnings %q, want none", w)
				}
				return
			}
			if len(w) != 1 {
				t.Fatalf("warnings %q, want one", w)
			}
			for _, s := range tt.want {
				if !strings.Contains(w[0], s) {
					t.Errorf("warning %q lacks %q", w[0], s)
				}
			}
			if strings.Contains(w[0], "PAWS") != strings.Contains(strings.Join(tt.want, ""), "TIME_WAIT") {
				t.Errorf("warning %q: PAWS part", w[0])
			}
			if strings.Contains(w[0], "slowest connect") != (tt.metrics[result.ConnectUsMax] > 0) {
				t.Errorf("warning %q: the slowest connect is said only where measured", w[0])
			}
		})
	}
}
