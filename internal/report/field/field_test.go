package field

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// run is a synthetic cell: labels and the primary metric's repeats.
func run(labels map[string]string, vals ...float64) result.Run {
	r := result.Run{Labels: labels, Summary: map[string]stats.Summary{}}
	metric := result.TransPerSec
	if labels["test"] == "tcp_stream" {
		metric = result.ThroughputBitsPerSec
	}
	for i, v := range vals {
		r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: map[string]float64{metric: v}})
	}
	r.Summary = result.SummarizeRepeats(r.Repeats)
	return r
}

// cniSet is a cluster's run of one CNI: a baseline and a cross-node
// tcp_rr cell at ratio of the baseline, 6 repeats each, and optionally a
// same-node cell between other nodes (never graded) and findings.
func cniSet(cni, mode, version string, ratio float64, opts ...func(*result.Set)) *result.Set {
	l := func(dp, path, client, server string) map[string]string {
		return map[string]string{"datapath": dp, "path": path, "test": "tcp_rr", "flows": "1", "mtu": "1500",
			"cni": cni, "cni_mode": mode, "cni_version": version, "client_node": client, "server_node": server}
	}
	base := []float64{100, 101, 99, 100, 102, 98}
	var dp []float64
	for _, v := range base {
		dp = append(dp, v*ratio)
	}
	s := &result.Set{Schema: result.SchemaResults, Start: time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC),
		Host:   result.Host{Hostname: "vm", CPUModel: "AMD EPYC", Cores: 2, Kernel: "6.18"},
		Config: map[string]string{"backend": "kubernetes", "cni": cni, "repeat": "6", "tests": "tcp_rr"},
		Runs: []result.Run{
			run(l("baseline", "node-to-node", "n1", "n2"), base...),
			run(l("cni-"+cni, "cross-node", "n1", "n2"), dp...),
			run(l("cni-"+cni, "same-node", "n1", "n1"), dp...),
		}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func withFinding(check, verdict, summary string, metrics map[string]float64) func(*result.Set) {
	return func(s *result.Set) {
		s.Findings = append(s.Findings, result.Finding{Check: check, Verdict: verdict, Summary: summary, Metrics: metrics})
	}
}

func notMeasured(cni, mode, reason string) *result.Set {
	return &result.Set{Schema: result.SchemaResults, Skipped: []result.Skip{{Labels: map[string]string{"cni": cni, "cni_mode": mode}, Reason: reason}}}
}

func TestNewRefuses(t *testing.T) {
	flannel := cniSet("flannel", "vxlan", "v0.28", 0.5)
	noLabel := cniSet("flannel", "vxlan", "v0.28", 0.5)
	for i := range noLabel.Runs {
		delete(noLabel.Runs[i].Labels, "cni")
	}
	mixed := cniSet("flannel", "vxlan", "v0.28", 0.5)
	mixed.Runs[1].Labels["cni_mode"] = "host-gw"
	tests := []struct {
		name   string
		inputs []Input
		want   string
	}{
		{"one file", []Input{{"a.json", flannel}}, "needs at least two results files, one per CNI; got 1"},
		{"no cni label", []Input{{"a.json", flannel}, {"lab.json", noLabel}}, `lab.json: 3 of its 3 runs carry no "cni" label`},
		{"no cni label says report FILE", []Input{{"a.json", flannel}, {"lab.json", noLabel}}, "cnibench report lab.json renders one run"},
		{"same configuration twice", []Input{{"a.json", flannel}, {"b.json", cniSet("flannel", "vxlan", "v0.28", 0.6)}},
			"a.json and b.json both hold runs of flannel v0.28 (vxlan)"},
		{"two configurations in a file", []Input{{"a.json", flannel}, {"m.json", mixed}}, "m.json: its runs carry 2 CNI configurations"},
		{"empty file", []Input{{"a.json", flannel}, {"e.json", &result.Set{Schema: result.SchemaResults}}}, `e.json: no runs, and no skipped entry labelled "cni"`},
		{"nothing measured", []Input{{"w.json", notMeasured("weave", "", "skipped: x")}, {"c.json", notMeasured("calico", "", "skipped: y")}}, "none of the 2 files holds runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.inputs)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		ids  []ID
		want []string
	}{
		{[]ID{{"flannel", "vxlan", "v1", ""}, {"cilium", "native routing", "v2", ""}}, []string{"flannel", "cilium"}},
		{[]ID{{"flannel", "vxlan", "v1", ""}, {"flannel", "host-gw", "v1", ""}}, []string{"flannel vxlan", "flannel host-gw"}},
		{[]ID{{"cilium", "native routing, eBPF host routing", "v1", ""}, {"cilium", "native routing, legacy host routing", "v1", ""}},
			[]string{"cilium eBPF host routing", "cilium legacy host routing"}},
		{[]ID{{"calico", "bgp", "v3.6", ""}, {"calico", "bgp", "v3.7", ""}}, []string{"calico v3.6", "calico v3.7"}},
		{[]ID{{"calico", "", "", ""}, {"calico", "", "v3", ""}}, []string{"calico", "calico v3"}},
		{[]ID{{"bridge", "", "", "iptables"}, {"bridge", "", "", "nftables"}}, []string{"bridge, kube-proxy iptables", "bridge, kube-proxy nftables"}},
		{[]ID{{"flannel", "vxlan", "v1", "iptables"}, {"calico", "vxlan", "v3", "iptables"}}, []string{"flannel", "calico"}},
	}
	for _, tt := range tests {
		var es []*Entry
		for _, id := range tt.ids {
			es = append(es, &Entry{ID: id})
		}
		nameEntries(es)
		for i, e := range es {
			if e.Name != tt.want[i] {
				t.Errorf("%v: name %q, want %q", tt.ids, e.Name, tt.want[i])
			}
		}
	}
}

// The graded summary: graded as the single-run report grades, a cell not
// trusted, a cell not measured and a same-node cell without a matching
// baseline, each said so.
func TestSummaryCells(t *testing.T) {
	untrusted := cniSet("cilium", "native", "v1", 0.95)
	untrusted.Runs[1].NotTrusted = "not trusted: the host was busy (median 40 % of a core used by other programs)"
	// A same-node cell measured at an MTU the baseline was not: no
	// baseline to grade it against.
	untrusted.Runs[2].Labels["mtu"] = "9000"
	stream := cniSet("flannel", "vxlan", "v0.28", 0.45)
	f, err := New([]Input{{"flannel.json", stream}, {"cilium.json", untrusted}, {"weave.json", notMeasured("weave", "fastdp", "skipped: no module")}})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := Markdown(&md, f); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| flannel | 🔴 Poor (45 %) |",                 // one grade: the interval stays below 50 %
		"| cilium | not trusted [a] |",                // not graded, with why
		"[a] not trusted: the host was busy",          // the reason as a note
		"| cilium | not graded [a] |",                 // same-node at an MTU the baseline did not run
		"(mtu 9000, the baseline's 1500)",             // …said so, and only that
		"Not measured, so not in these tables: weave", // the CNI that could not run
		"- weave (fastdp): skipped: no module (weave.json)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	// Same-node is graded against the node-to-node baseline, as in the lab.
	if n := strings.Count(out, "| flannel | 🔴 Poor (45 %) |"); n != 2 {
		t.Errorf("flannel graded in %d tables, want 2 (cross-node and same-node)", n)
	}
}

func TestChecksNotMade(t *testing.T) {
	a := cniSet("flannel", "vxlan", "v0.28", 0.5, withFinding("mtu", "misconfigured", "pod MTU 1500 exceeds 1450", map[string]float64{"pod_mtu": 1500, "node_mtu": 1500, "encap_overhead_bytes": 50, "throughput_cost_pct": 46.1}))
	a.Config["checks"] = "cni,mtu"
	b := cniSet("cilium", "native", "v1", 0.9, withFinding("cni_footprint", "failed", "none of the CNI's pods could be measured", nil),
		withFinding("network_policy", "enforced", "NetworkPolicy is enforced", nil))
	f, err := New([]Input{{"a.json", a}, {"b.json", b}})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := Text(&txt, f, false); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	for _, want := range []string{
		"not checked [a]", "[a] the run's checks were cni,mtu", // a check the run did not make
		"failed [b]", "none of the CNI's pods could be measured", // a check that failed
		"misconfigured [a]", "46.1 %", "50 bytes",
		"Every CNI named in the input was measured.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
}

// A busy run's interference line is quoted; differing machines are said
// first.
func TestWhatElseDiffers(t *testing.T) {
	a := cniSet("flannel", "vxlan", "v0.28", 0.5)
	a.Interference = &result.Interference{ThresholdPct: 25, MedianPct: 30, MaxPct: 80, Repeats: 12, Busy: 4, Cells: 3, Touched: 2}
	b := cniSet("cilium", "native", "v1", 0.9)
	b.Host.Kernel = "6.1"
	b.Config["repeat"] = "12"
	out := markdownOf(t, a, b)
	first := strings.Index(out, "## What is compared\n\n") + len("## What is compared\n\n")
	if !strings.HasPrefix(out[first:], "The runs ran on different machines") {
		t.Errorf("the machines' difference is not said first:\n%s", out[first:])
	}
	for _, want := range []string{"kernel 6.18", "kernel 6.1", "They differ in repeat: 6 for flannel; 12 for cilium.", "flannel: The host was busy", "4 of 12 repeats"} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

// markdownOf is the field report in Markdown of a (a.json) and b (b.json).
func markdownOf(t *testing.T, a, b *result.Set) string {
	t.Helper()
	f, err := New([]Input{{"a.json", a}, {"b.json", b}})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := Markdown(&md, f); err != nil {
		t.Fatal(err)
	}
	return md.String()
}

// A run told not to mark busy repeats (--busy-threshold 0) is never
// called quiet: its measured interference is quoted instead.
func TestUnjudgedInterferenceNotQuiet(t *testing.T) {
	a := cniSet("flannel", "vxlan", "v0.28", 0.5)
	a.Interference = &result.Interference{ThresholdPct: 0, MedianPct: 132, MaxPct: 145, Repeats: 40, Cells: 8}
	b := cniSet("cilium", "native", "v1", 0.9)
	b.Interference = &result.Interference{ThresholdPct: 25, MedianPct: 3, MaxPct: 9, Repeats: 40, Cells: 8}
	out := markdownOf(t, a, b)
	for _, want := range []string{"--busy-threshold 0", "flannel: Other programs on the host used a median 132 %", "The host was quiet (no repeat past the busy threshold) in cilium."} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quiet (no repeat past the busy threshold) in flannel") {
		t.Errorf("a run with --busy-threshold 0 is called quiet")
	}
}

func TestHTMLNotesAreTooltips(t *testing.T) {
	a := cniSet("flannel", "vxlan", "v0.28", 0.5, withFinding("network_policy", "not-enforced", `every "denied" connection <was> accepted`, nil))
	b := cniSet("cilium", "native", "v1", 0.9)
	f, err := New([]Input{{"a.json", a}, {"b.json", b}})
	if err != nil {
		t.Fatal(err)
	}
	var h bytes.Buffer
	if err := HTML(&h, f); err != nil {
		t.Fatal(err)
	}
	out := h.String()
	for _, want := range []string{`title="every &#34;denied&#34; connection &lt;was&gt; accepted"`, `class="g-poor"`, "<section id=\"not-measured\">"} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"NaN", "<was>", "%!"} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML contains %q", bad)
		}
	}
}
