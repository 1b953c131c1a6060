package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/kube/cni"
)

// TestFootprintNamesNodesSummed: the sums are of the run's two nodes'
// pods, and the summary says which nodes; pods elsewhere are apart.
func TestFootprintNamesNodesSummed(t *testing.T) {
	const mib = 1 << 20
	pods := []cni.PodRef{
		{Namespace: "kube-system", Name: "cilium-a", Node: "n1", UID: "u1"},
		{Namespace: "kube-system", Name: "cilium-b", Node: "n2", UID: "u2"},
		{Namespace: "kube-system", Name: "cilium-c", Node: "n3", UID: "u3"},
		{Namespace: "kube-system", Name: "cilium-operator", Node: "n4", UID: "u4"},
	}
	u := func(cpu, mem float64) usage { return usage{millicores: cpu, memBytes: mem * mib} }
	idle := map[string]usage{"u1": u(10, 100), "u2": u(20, 50), "u3": u(5, 40), "u4": u(1, 30)}
	loaded := map[string]usage{"u1": u(300, 110), "u2": u(100, 60), "u3": u(6, 40), "u4": u(2, 30)}
	tests := []struct {
		name     string
		runNodes []string
		metrics  map[string]float64
		summary  []string
	}{
		{name: "the run's nodes", runNodes: []string{"n1", "n2"},
			metrics: map[string]float64{"cni_pods": 4, "cni_pods_measured": 4, "cpu_millicores_idle": 30, "cpu_millicores_load": 400,
				"memory_bytes_idle": 150 * mib, "memory_bytes_load": 170 * mib, "cni_pods_other_nodes": 2,
				"cpu_millicores_idle_other_nodes": 6, "cpu_millicores_load_other_nodes": 8, "memory_bytes_idle_other_nodes": 70 * mib, "memory_bytes_load_other_nodes": 70 * mib},
			summary: []string{"the CNI's 2 pod(s) on the run's nodes n1 and n2 use 30.0 mCPU and 150.0 MiB idle, 400.0 mCPU and 170.0 MiB under a 8-flow cross-node stream (10s samples)",
				"; its 2 pod(s) on other nodes (n3, n4), not in those sums, use 6.0 mCPU and 70.0 MiB idle"}},
		{name: "every node named", runNodes: nil,
			metrics: map[string]float64{"cni_pods": 4, "cni_pods_measured": 4, "cpu_millicores_idle": 36, "cpu_millicores_load": 408,
				"memory_bytes_idle": 220 * mib, "memory_bytes_load": 240 * mib},
			summary: []string{"the CNI's 4 pod(s) on node(s) n1, n2, n3, n4 use 36.0 mCPU"}},
		{name: "only other nodes measured", runNodes: []string{"n8", "n9"},
			metrics: map[string]float64{"cni_pods": 4, "cni_pods_measured": 4, "cni_pods_other_nodes": 4,
				"cpu_millicores_idle_other_nodes": 36, "cpu_millicores_load_other_nodes": 408, "memory_bytes_idle_other_nodes": 220 * mib, "memory_bytes_load_other_nodes": 240 * mib},
			summary: []string{"none of the CNI's pods on the run's nodes n8 and n9 could be measured; its 4 pod(s) on other nodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := footprintFindingOn(pods, idle, loaded, 10*time.Second, tt.runNodes)
			if f.Verdict != "measured" {
				t.Errorf("verdict %s", f.Verdict)
			}
			for k, v := range tt.metrics {
				if f.Metrics[k] != v {
					t.Errorf("metric %s = %v, want %v", k, f.Metrics[k], v)
				}
			}
			if len(f.Metrics) != len(tt.metrics) {
				t.Errorf("metrics %v", f.Metrics)
			}
			for _, s := range tt.summary {
				if !strings.Contains(f.Summary, s) {
					t.Errorf("summary %q lacks %q", f.Summary, s)
				}
			}
		})
	}
}
