package compare

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func clusterSet(cni, cluster string, cells ...map[string]string) *result.Set {
	s := &result.Set{Schema: result.SchemaResults}
	for _, c := range cells {
		l := map[string]string{"test": "tcp_rr", "flows": "1", "cni": cni, "cni_mode": cni + "-mode", "cluster": cluster}
		for k, v := range c {
			l[k] = v
		}
		if l["datapath"] == "" {
			l["datapath"] = "cni-" + cni
		}
		r := result.Run{Labels: l}
		for i, v := range []float64{100, 101, 99, 100, 102} {
			r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: map[string]float64{result.TransPerSec: v}})
		}
		r.Summary = result.SummarizeRepeats(r.Repeats)
		s.Runs = append(s.Runs, r)
	}
	return s
}

func TestCompareByCNIAcrossFiles(t *testing.T) {
	cross := map[string]string{"path": "cross-node", "client_node": "a1", "server_node": "a2"}
	base := map[string]string{"path": "node-to-node", "datapath": "baseline", "client_node": "a1", "server_node": "a2"}
	other := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		out["client_node"], out["server_node"] = "b1", "b2"
		return out
	}
	// Two same-node cells per file that only their nodes tell apart.
	same1 := map[string]string{"path": "same-node", "client_node": "a1", "server_node": "a1"}
	same2 := map[string]string{"path": "same-node", "client_node": "a2", "server_node": "a2"}
	tests := []struct {
		name        string
		a, b        *result.Set
		by          string
		baseline    string
		wantRows    int // rows of the trans_per_sec table
		wantIgnored string
		wantErr     string
	}{
		{"other clusters' nodes ignored", clusterSet("flannel", "A", cross, base), clusterSet("cilium", "B", other(cross), other(base)),
			"cni", "flannel", 2, "cluster, client_node, server_node (the file's cluster)", ""},
		{"nodes kept when they tell cells apart", clusterSet("flannel", "A", cross, same1, same2), clusterSet("cilium", "A", cross, same1, same2),
			"cni", "flannel", 3, "cluster (the file's cluster)", ""},
		{"one value in two files", clusterSet("flannel", "A", cross), clusterSet("flannel", "B", cross),
			"cni", "flannel", 0, "", "both have runs with cni=flannel (two configurations of one CNI: --by cni,cni_mode)"},
		// A CNI that replaces kube-proxy: the files differ in
		// kube_proxy_mode, which is the CNI's configuration.
		{"kube-proxy replaced by one CNI", clusterSet("flannel", "A", withLabel("kube_proxy_mode", "iptables", cross, base)...), clusterSet("cilium", "A", withLabel("kube_proxy_mode", "replaced by cilium", cross, base)...),
			"cni", "flannel", 2, "cni_mode, kube_proxy_mode (the CNI's configuration)", ""},
		{"kube-proxy alike: matched on it", clusterSet("flannel", "A", withLabel("kube_proxy_mode", "iptables", cross, base)...), clusterSet("calico", "A", withLabel("kube_proxy_mode", "iptables", cross, base)...),
			"cni", "flannel", 2, "cni_mode (the CNI's configuration)", ""},
		// --by cni_mode, one CNI in two modes: the baseline's value holds
		// a comma, which one --by label takes whole.
		{"one label's value with a comma", clusterSet("calico", "A", withLabel("cni_mode", "bgp, iptables dataplane", cross, base)...), clusterSet("calico", "A", withLabel("cni_mode", "bgp, eBPF dataplane", cross, base)...),
			"cni_mode", "bgp, iptables dataplane", 2, "", ""},
		// --by service_proxy: kube-proxy's two modes on one CNI (the
		// files differ in kube_proxy_mode), and kube-proxy against
		// Cilium's replacement (they differ in the CNI too).
		{"service proxy: kube-proxy's modes", clusterSet("flannel", "A", withLabel("service_proxy", "kube-proxy-iptables", withLabel("kube_proxy_mode", "iptables", cross)...)...),
			clusterSet("flannel", "A", withLabel("service_proxy", "kube-proxy-nftables", withLabel("kube_proxy_mode", "nftables", cross)...)...),
			"service_proxy", "kube-proxy-iptables", 1, "cni_mode, kube_proxy_mode (the CNI's configuration)", ""},
		{"service proxy: another CNI's replacement", clusterSet("flannel", "A", withLabel("service_proxy", "kube-proxy-iptables", withLabel("kube_proxy_mode", "iptables", cross)...)...),
			clusterSet("cilium", "A", withLabel("service_proxy", "cilium-kpr", withLabel("kube_proxy_mode", "replaced by cilium", cross)...)...),
			"service_proxy", "kube-proxy-iptables", 1, "cni, cni_mode, kube_proxy_mode (the CNI's configuration)", ""},
		{"another label: nothing more ignored", clusterSet("flannel", "A", cross), clusterSet("cilium", "A", cross),
			"cni_mode", "flannel-mode", 0, "", "nothing to compare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Compare([]Input{{"a.json", tt.a}, {"b.json", tt.b}}, Options{Mode: Mode(tt.by), Baseline: tt.baseline})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Tables[0].Rows); n != tt.wantRows {
				t.Errorf("%d rows, want %d", n, tt.wantRows)
			}
			if got := strings.Join(res.Ignored, "; "); !strings.Contains(got, tt.wantIgnored) {
				t.Errorf("ignored %q, want %q", got, tt.wantIgnored)
			} else if tt.name == "kube-proxy alike: matched on it" && strings.Contains(got, "kube_proxy_mode") {
				t.Errorf("ignored %q: kube_proxy_mode is the same in both files", got)
			}
			if tt.by == "cni" && !strings.Contains(strings.Join(res.notes(), "\n"), "labels ignored for matching besides cni") {
				t.Errorf("notes do not say what was ignored: %q", res.notes())
			}
		})
	}
}

// withLabel copies cells with label key set to value.
func withLabel(key, value string, cells ...map[string]string) []map[string]string {
	var out []map[string]string
	for _, c := range cells {
		m := map[string]string{key: value}
		for k, v := range c {
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}
