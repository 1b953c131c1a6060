package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

func run(labels map[string]string, metric string, vals ...float64) result.Run {
	r := result.Run{Labels: labels}
	for i, v := range vals {
		r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: map[string]float64{metric: v}})
	}
	r.Summary = result.SummarizeRepeats(r.Repeats)
	return r
}

func set(runs ...result.Run) *result.Set {
	return &result.Set{Schema: result.SchemaResults, Runs: runs}
}

func TestSingleResultsMatchWhateverTheirLabels(t *testing.T) {
	a := set(run(map[string]string{"test": "tcp_rr", "flows": "1", "target": "10.0.0.1:5201"}, result.TransPerSec, 100, 101, 99, 100, 102))
	b := set(run(map[string]string{"test": "tcp_rr", "flows": "1", "target": "10.0.0.2:5201"}, result.TransPerSec, 110, 111, 109, 110, 112))
	r, err := Compare([]Input{{"a.json", a}, {"b.json", b}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tables) != 1 || len(r.Tables[0].Rows) != 1 {
		t.Fatalf("tables %+v", r.Tables)
	}
	c := r.Tables[0].Rows[0].Cells[0]
	if !c.Significant || c.Better != 1 || math.Abs(c.DeltaPct-10) > 0.01 {
		t.Errorf("cell %+v", c)
	}
}

func TestBaselineMatchIgnoresPathOnlyWhenNeeded(t *testing.T) {
	l := func(dp, path string) map[string]string {
		return map[string]string{"datapath": dp, "path": path, "test": "tcp_stream", "flows": "1"}
	}
	m := result.ThroughputBitsPerSec
	s := set(
		run(l("baseline", "node-to-node"), m, 10, 10, 10, 10, 10),
		run(l("veth", "cross-node"), m, 8, 8, 8, 8, 8),
		run(l("veth", "same-node"), m, 9, 9, 9, 9, 9),
		run(l("ebpf", "cross-node"), m, 9.5, 9.5, 9.5, 9.5, 9.5),
	)
	r, err := Compare([]Input{{"r.json", s}}, Options{Mode: ByDatapath, Baseline: "baseline", Metrics: []string{m}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.Tables[0].Rows); got != 3 {
		t.Fatalf("%d rows, want 3", got)
	}
	for _, row := range r.Tables[0].Rows {
		if row.BaseLabels["path"] != "node-to-node" {
			t.Errorf("%v matched %v", row.Labels, row.BaseLabels)
		}
	}
	// With veth as the baseline, the paths match exactly.
	r, err = Compare([]Input{{"r.json", s}}, Options{Mode: ByDatapath, Baseline: "veth", Metrics: []string{m}})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Tables[0].Rows {
		if row.Labels["datapath"] == "ebpf" && row.BaseLabels["path"] != "cross-node" {
			t.Errorf("ebpf cross-node matched %v", row.BaseLabels)
		}
	}
}

// TestByPathIgnoresPlacementOnlyWhenNeeded: --by path matches a path whose
// client or server is elsewhere (same-node, external-to-loadbalancer) with
// the baseline path's run despite their node and zone labels, but never
// across tests or flows, and a run with the same placement matches exactly.
func TestByPathIgnoresPlacementOnlyWhenNeeded(t *testing.T) {
	l := func(path, cli, srv, flows string) map[string]string {
		return map[string]string{"datapath": "cni-bridge", "path": path, "test": "tcp_rr", "flows": flows,
			"client_node": cli, "server_node": srv, "client_zone": "z", "server_zone": "z"}
	}
	ext := l("external-to-loadbalancer", "external", "n2", "1")
	ext["client_zone"] = "external"
	m := result.TransPerSec
	s := set(
		run(l("pod-to-service", "n1", "n2", "1"), m, 10, 10, 10, 10, 10),
		run(l("pod-to-loadbalancer", "n1", "n2", "1"), m, 9, 9, 9, 9, 9),
		run(ext, m, 8, 8, 8, 8, 8),
		run(l("same-node", "n1", "n1", "1"), m, 20, 20, 20, 20, 20),
		run(l("external-to-loadbalancer", "external", "n2", "4"), m, 30, 30, 30, 30, 30),
	)
	r, err := Compare([]Input{{"r.json", s}}, Options{Mode: Mode("path"), Baseline: "pod-to-service", Metrics: []string{m}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, row := range r.Tables[0].Rows {
		got[row.Labels["path"]] = true
		if row.BaseLabels["path"] != "pod-to-service" || row.BaseLabels["flows"] != row.Labels["flows"] {
			t.Errorf("%v matched %v", row.Labels, row.BaseLabels)
		}
	}
	if len(got) != 3 || !got["pod-to-loadbalancer"] || !got["external-to-loadbalancer"] || !got["same-node"] {
		t.Errorf("rows for %v, want pod-to-loadbalancer, external-to-loadbalancer, same-node", got)
	}
	if r.Unmatched != 1 {
		t.Errorf("%d unmatched, want 1 (the ×4 run: no pod-to-service ×4)", r.Unmatched)
	}
}

// TestByMechanism compares the egress scenario's mechanisms with none: the
// new-connection runs of a netfilter mechanism fall back to none's
// every-packet run (none has no bypass), and rules must match.
func TestByMechanism(t *testing.T) {
	l := func(mech, rules, trav string) map[string]string {
		return map[string]string{"scenario": "egress-filter", "mechanism": mech, "rules": rules, "traversal": trav, "test": "tcp_rr", "flows": "1"}
	}
	m := result.TransPerSec
	s := set(
		run(l("none", "10", "every-packet"), m, 100, 101, 99, 100, 102, 100),
		run(l("none", "1000", "every-packet"), m, 100, 101, 99, 100, 102, 100),
		run(l("iptables", "10", "every-packet"), m, 90, 91, 89, 90, 92, 90),
		run(l("iptables", "10", "new-connection"), m, 99, 101, 99, 100, 102, 100),
		run(l("iptables", "1000", "every-packet"), m, 40, 41, 39, 40, 42, 40),
		run(l("ipset", "100", "every-packet"), m, 99, 101, 99, 100, 102, 100), // no none at 100
	)
	r, err := Compare([]Input{{"r.json", s}}, Options{Mode: "mechanism", Baseline: "none", Metrics: []string{m}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Unmatched != 1 {
		t.Errorf("unmatched %d, want 1 (ipset at 100 rules)", r.Unmatched)
	}
	rows := r.Tables[0].Rows
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for _, row := range rows {
		if row.BaseLabels["rules"] != row.Labels["rules"] || row.BaseLabels["traversal"] != "every-packet" {
			t.Errorf("%v matched %v", row.Labels, row.BaseLabels)
		}
		c := row.Cells[0]
		switch {
		case row.Labels["rules"] == "1000" && !(c.Significant && c.Better == -1 && math.Abs(c.DeltaPct+60) < 0.01):
			t.Errorf("iptables at 1000: %+v, want significant -60 %%", c)
		case row.Labels["traversal"] == "new-connection" && c.Significant:
			t.Errorf("iptables new-connection at 10: %+v, want no significant change", c)
		}
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vs none", "except mechanism, and except traversal when no run of none has the same traversal", "1 run(s) have no none counterpart"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := Compare([]Input{{"r.json", s}}, Options{Mode: "mechanism"}); err == nil || !strings.Contains(err.Error(), "--baseline: name the reference mechanism for --by mechanism (values: ") {
		t.Errorf("no baseline: %v", err)
	}
}

func TestSummaryOnlyAndMissing(t *testing.T) {
	l := map[string]string{"test": "tcp_rr", "flows": "1"}
	old := set(
		result.Run{Labels: l, Summary: map[string]stats.Summary{result.TransPerSec: {N: 5, Median: 100, Min: 99, Max: 101, CI95Low: 99, CI95High: 101}}},
		run(map[string]string{"test": "tcp_rr", "flows": "32"}, result.TransPerSec, 1, 2, 3),
	)
	nw := set(
		run(l, result.TransPerSec, 0, 0, 0, 0, 0),
		run(map[string]string{"test": "http", "flows": "1"}, result.TransPerSec, 5, 5, 5, 5, 5),
	)
	r, err := Compare([]Input{{"old.json", old}, {"new.json", nw}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, md, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "md": md.String(), "json": js.String()} {
		for _, bad := range []string{"NaN", "Inf", "%!"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s output contains %q:\n%s", name, bad, out)
			}
		}
	}
	if !strings.Contains(text.String(), "? (no repeats to test)") {
		t.Errorf("summary-only row not marked:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "—") {
		t.Errorf("missing cells not shown as —:\n%s", text.String())
	}
}

func TestNothingToCompare(t *testing.T) {
	a := set(run(map[string]string{"test": "tcp_rr", "flows": "1"}, result.TransPerSec, 1, 2, 3), run(map[string]string{"test": "tcp_rr", "flows": "2"}, result.TransPerSec, 1))
	_, err := Compare([]Input{{"a.json", a}, {"b.json", set()}}, Options{Metrics: []string{"trans_per_sec"}})
	if err != nil {
		t.Fatalf("runs only in OLD are still shown: %v", err)
	}
	_, err = Compare([]Input{{"a.json", a}, {"b.json", set()}}, Options{Metrics: []string{"latency_us_p99"}})
	if err == nil || !strings.Contains(err.Error(), "--metrics latency_us_p99: no run has this metric") {
		t.Errorf("err = %v", err)
	}
}

func TestTooFewRepeatsSaySo(t *testing.T) {
	a := set(run(map[string]string{"test": "tcp_rr"}, result.TransPerSec, 100, 101, 99))
	b := set(run(map[string]string{"test": "tcp_rr"}, result.TransPerSec, 200, 201, 199))
	r, err := Compare([]Input{{"a.json", a}, {"b.json", b}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Tables[0].Rows[0].Cells[0]
	if !c.TooFew || c.Significant {
		t.Fatalf("3 vs 3 must give no verdict: %+v", c)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"too few repeats for a verdict", "n=3 vs 3: too few repeats for a significance test at alpha=0.05", "need >= 4 each"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestBySeveralLabels: --by lb_mode,transport --baseline snat,vxlan
// matches each combination with the baseline's on every other label.
func TestBySeveralLabels(t *testing.T) {
	l := func(lb, tr, fw string) map[string]string {
		return map[string]string{"scenario": "l4lb", "lb_mode": lb, "transport": tr, "firewall": fw, "test": "http", "flows": "1000"}
	}
	m := result.TransPerSec
	s := set(
		run(l("snat", "vxlan", "off"), m, 100, 101, 99, 100, 102, 100),
		run(l("snat", "vxlan", "on"), m, 90, 91, 89, 90, 92, 90),
		run(l("dsr", "direct", "off"), m, 200, 201, 199, 200, 202, 200),
		run(l("dsr", "direct", "on"), m, 180, 181, 179, 180, 182, 180),
		run(l("snat", "direct", "off"), m, 150, 151, 149, 150, 152, 150),
	)
	r, err := Compare([]Input{{"r.json", s}}, Options{Mode: "lb_mode,transport", Baseline: "snat,vxlan", Metrics: []string{m}})
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Tables[0].Rows
	if len(rows) != 3 || r.Unmatched != 0 {
		t.Fatalf("%d rows, %d unmatched; want 3, 0", len(rows), r.Unmatched)
	}
	for _, row := range rows {
		if row.BaseLabels["firewall"] != row.Labels["firewall"] || row.BaseLabels["lb_mode"] != "snat" || row.BaseLabels["transport"] != "vxlan" {
			t.Errorf("%v matched %v", row.Labels, row.BaseLabels)
		}
		if c := row.Cells[0]; row.Labels["lb_mode"] == "dsr" && row.Labels["firewall"] == "off" && math.Abs(c.DeltaPct-100) > 0.01 {
			t.Errorf("dsr+direct vs snat+vxlan: %+v, want +100 %%", c)
		}
	}
	for _, tt := range []struct{ base, want string }{
		{"snat", "give one value for each label of --by lb_mode,transport (2)"},
		{"dsr,vxlan", "no runs with lb_mode,transport=dsr,vxlan (values: snat,vxlan; dsr,direct; snat,direct)"},
	} {
		if _, err := Compare([]Input{{"r.json", s}}, Options{Mode: "lb_mode,transport", Baseline: tt.base, Metrics: []string{m}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--baseline %s: %v, want %q", tt.base, err, tt.want)
		}
	}
}

// A lab run and a cluster run differ in datapath, backend and node labels:
// --match path,test,flows pairs them; a file with two runs of one match
// key is refused with the labels that collide.
func TestMatchOnSomeLabels(t *testing.T) {
	m := result.ThroughputBitsPerSec
	l := func(extra map[string]string, path string) map[string]string {
		x := map[string]string{"path": path, "test": "tcp_stream", "flows": "1", "mtu": "1500"}
		for k, v := range extra {
			x[k] = v
		}
		return x
	}
	lab := set(
		run(l(map[string]string{"datapath": "veth-routing"}, "cross-node"), m, 10, 10, 10, 10, 10),
		run(l(map[string]string{"datapath": "baseline"}, "node-to-node"), m, 20, 20, 20, 20, 20),
	)
	k8s := set(
		run(l(map[string]string{"datapath": "cni-bridge", "backend": "kubernetes", "client_node": "n1"}, "cross-node"), m, 5, 5, 5, 5, 5),
		run(l(map[string]string{"datapath": "baseline", "backend": "kubernetes"}, "node-to-node"), m, 20, 20, 20, 20, 20),
	)
	in := []Input{{"lab.json", lab}, {"k8s.json", k8s}}
	if r, err := Compare(in, Options{Metrics: []string{m}}); err != nil || r.Tables[0].Rows[0].Cells[0].Compared {
		t.Fatalf("without --match nothing should pair: %v", err)
	}
	r, err := Compare(in, Options{Metrics: []string{m}, Match: []string{"path", "test", "flows"}})
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Tables[0].Rows
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, row := range rows {
		c := row.Cells[0]
		if !c.Compared {
			t.Errorf("%v not compared", row.Labels)
		}
		if _, ok := row.Labels["datapath"]; ok {
			t.Errorf("row labels %v keep an unmatched label", row.Labels)
		}
		if row.Labels["path"] == "cross-node" && math.Abs(c.DeltaPct+50) > 0.01 {
			t.Errorf("cross-node delta %.2f, want -50", c.DeltaPct)
		}
	}
	dup := set(lab.Runs[0], run(l(map[string]string{"datapath": "bridge"}, "cross-node"), m, 1, 1, 1, 1, 1))
	_, err = Compare([]Input{{"dup.json", dup}, {"k8s.json", k8s}}, Options{Metrics: []string{m}, Match: []string{"path", "test", "flows"}})
	if err == nil || !strings.Contains(err.Error(), "datapath=bridge") {
		t.Errorf("duplicate match key: err = %v", err)
	}
}
