package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// cellRun is a run of one cell with five repeats of the given metrics
// (each repeat the same values, so counters total five times the value)
// and an optional config.
func cellRun(dp, path, test string, metrics map[string]float64, config map[string]string) result.Run {
	r := result.Run{
		Labels: map[string]string{"datapath": dp, "path": path, "test": test, "flows": "1", "mtu": "1500"},
		Config: config,
	}
	for i := 0; i < 5; i++ {
		m := map[string]float64{}
		for k, v := range metrics {
			m[k] = v
		}
		r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: m})
	}
	return r
}

func TestWhyRules(t *testing.T) {
	base := map[string]float64{result.TransPerSec: 50000, result.CPUUsPerTrans: 20, result.LatencyUsP99: 50, result.HostCPUSoftirqPct: 40, result.HostCPUPct: 100}
	tests := []struct {
		name    string
		metrics map[string]float64
		config  map[string]string
		noBase  bool
		want    []string // substrings that must appear
		notWant []string
	}{
		{"no evidence: nothing said", map[string]float64{result.TransPerSec: 40000}, nil, false, nil,
			[]string{"conntrack", "bpf", "vs baseline", "MTU"}},
		{"redirect_peer counted", map[string]float64{"bpf_redirect_peer_packets": 52600}, nil, false,
			[]string{"263 k packets into pods by bpf_redirect_peer"}, []string{"bpf_redirect_neigh"}},
		{"conntrack zero", map[string]float64{result.ConntrackEntries: 0}, nil, false, []string{"no conntrack: 0 entries"}, nil},
		{"conntrack engaged", map[string]float64{result.ConntrackEntries: 128000}, nil, false, []string{"conntrack engaged: 128 k entries"}, nil},
		{"conntrack engaged, few", map[string]float64{result.ConntrackEntries: 4}, nil, false, []string{"conntrack engaged: 4 entries"}, nil},
		{"no netfilter", map[string]float64{"nft_forward_packets": 0}, nil, false, []string{"no netfilter: 0 packets in the nodes' forward chain"}, nil},
		{"netfilter forward", map[string]float64{"nft_forward_packets": 2000}, nil, false, []string{"10.0 k packets through the nodes' netfilter forward chain"}, nil},
		{"wire packets and size", map[string]float64{"wire_tx_packets": 1000, "wire_tx_bytes": 1514000}, nil, false, []string{"5000 packets on the wire (1514 bytes on average)"}, nil},
		{"BPF policy denied", map[string]float64{"bpf_policy_denied_packets": 3}, nil, false, []string{"15 denied by BPF policy"}, nil},
		{"softirq share", map[string]float64{result.HostCPUSoftirqPct: 60, result.HostCPUPct: 100}, nil, false, []string{"softirq 60 % of host CPU (baseline 40 %)"}, nil},
		{"vxlan counter", map[string]float64{"vxlan_tx_packets": 300000}, nil, false, []string{"VXLAN: 1.50 M packets encapsulated"}, nil},
		{"drops only when any", map[string]float64{"bpf_drop_packets": 0, "conntrack_drops": 0}, nil, false, nil, []string{"dropped", "drops"}},
		{"conntrack drops", map[string]float64{"conntrack_drops": 12}, nil, false, []string{"60 conntrack drops"}, nil},
		{"fragmentation, both ends", map[string]float64{"client_ip_frag_creates": 20000, "server_ip_frag_creates": 0}, nil, false, []string{"IP fragmentation: 100 k fragments created"}, nil},
		{"no fragmentation", map[string]float64{"client_ip_frag_creates": 0, "server_ip_frag_creates": 0}, nil, false, nil, []string{"fragment"}},
		{"path MTU below the wire", nil, map[string]string{"path_mtu": "1450"}, false, []string{"path MTU 1450 of 1500 (50 bytes"}, nil},
		{"path MTU equal to the wire", nil, map[string]string{"path_mtu": "1500"}, false, nil, []string{"path MTU"}},
		{"expected path MTU as fallback", nil, map[string]string{"expected_path_mtu": "1450"}, false, []string{"path MTU 1450 of 1500"}, nil},
		{"CPU vs baseline", map[string]float64{result.CPUUsPerTrans: 15.6}, nil, false, []string{"vs baseline: −22 % CPU per transaction"}, nil},
		{"conntrack new packets", map[string]float64{"conntrack_new_packets": 10}, nil, false, []string{"50 forwarded packets in conntrack state new"}, nil},
		{"BPF conntrack", map[string]float64{"bpf_ct_new_packets": 2, "bpf_ct_established_packets": 20000}, nil, false, []string{"BPF connection tracking: 10 new, 100 k established packets"}, nil},
		{"TIME_WAIT carried over", map[string]float64{"time_wait_at_start": 1200}, nil, false, []string{"up to 1200 TIME_WAIT sockets at a cell's start"}, nil},
		{"no TIME_WAIT", map[string]float64{"time_wait_at_start": 0}, nil, false, nil, []string{"TIME_WAIT"}},
		{"conntrack new packets zero", map[string]float64{"conntrack_new_packets": 0}, nil, false, nil, []string{"state new"}},
		{"small change left out", map[string]float64{result.CPUUsPerTrans: 20.4}, nil, false, nil, []string{"CPU per transaction"}},
		{"several changes in one statement", map[string]float64{result.CPUUsPerTrans: 26, result.LatencyUsP99: 75}, nil, false,
			[]string{"vs baseline: +30 % CPU per transaction, +50 % p99 latency"}, nil},
		{"no baseline, no comparison", map[string]float64{result.CPUUsPerTrans: 15.6, result.ConntrackEntries: 0}, nil, true,
			[]string{"no conntrack"}, []string{"vs baseline"}},
		{"UDP loss from 1 %", map[string]float64{result.LossPct: 1.25}, nil, false, []string{"UDP loss up to 1.25 %"}, nil},
		{"UDP loss below 1 % left out", map[string]float64{result.LossPct: 0.2}, nil, false, nil, []string{"UDP loss"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]float64{result.TransPerSec: 45000}
			for k, v := range tt.metrics {
				m[k] = v
			}
			set := &result.Set{Schema: result.SchemaResults}
			if !tt.noBase {
				set.Runs = append(set.Runs, cellRun("baseline", "node-to-node", "tcp_rr", base, map[string]string{"path_mtu": "1500"}))
			}
			set.Runs = append(set.Runs, cellRun("dp", "cross-node", "tcp_rr", m, tt.config))
			got := strings.ReplaceAll(strings.Join(newModel(set).why("dp"), "; "), nbsp, " ")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("why = %q, want it to contain %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("why = %q, must not contain %q", got, w)
				}
			}
		})
	}
}

// Every rule reads a metric the set may lack: with none of them present,
// no rule may say anything (a statement needs its evidence).
func TestWhyRulesNeedTheirMetric(t *testing.T) {
	set := &result.Set{Schema: result.SchemaResults, Runs: []result.Run{
		cellRun("baseline", "node-to-node", "tcp_rr", map[string]float64{result.TransPerSec: 1}, nil),
		cellRun("dp", "cross-node", "tcp_rr", map[string]float64{result.TransPerSec: 1}, nil),
	}}
	m := newModel(set)
	e := &evidence{m: m, dp: "dp", runs: filter(m.main, map[string]string{LabelDatapath: "dp"})}
	for _, r := range whyRules {
		if r.Metric == result.TransPerSec {
			continue
		}
		if got := e.statements([]whyRule{r}); len(got) > 0 {
			t.Errorf("rule %s spoke without its metric: %q", r.Metric, got)
		}
	}
}

func TestGradeSpan(t *testing.T) {
	tests := []struct {
		ratio, lo, hi float64
		want, class   string
	}{
		{0.94, 0.92, 0.96, "Very good (94 %)", "g-verygood"},
		{0.88, 0.84, 0.93, "Good–Very good (88 %)", "g-good-verygood"},
		{0.91, 0.86, 0.95, "Good–Very good (91 %)", "g-good-verygood"},
		{0.74, 0.45, 0.95, "Poor–Very good (74 %)", "g-poor-verygood"},
		{0.60, math.NaN(), math.NaN(), "Fair (60 %)", "g-fair"},
	}
	for _, tt := range tests {
		c := gradeCell{Grade: GradeOf(tt.ratio), Ratio: tt.ratio, Lo: tt.lo, Hi: tt.hi}
		if got := c.text(); got != tt.want {
			t.Errorf("text(%v [%v, %v]) = %q, want %q", tt.ratio, tt.lo, tt.hi, got, tt.want)
		}
		if got := c.class(); got != tt.class {
			t.Errorf("class(%v [%v, %v]) = %q, want %q", tt.ratio, tt.lo, tt.hi, got, tt.class)
		}
		if !strings.Contains(gradeCSS(), "."+tt.class+" {") {
			t.Errorf("no CSS for %s", tt.class)
		}
	}
}

// A grade whose interval straddles a threshold says so, so two runs of
// the same datapath no longer flip between "Very good" and "Good".
func TestGradeUsesInterval(t *testing.T) {
	sum := func(med, lo, hi float64) map[string]stats.Summary {
		return map[string]stats.Summary{result.TransPerSec: {N: 5, Median: med, CI95Low: lo, CI95High: hi}}
	}
	set := &result.Set{Schema: result.SchemaResults, Runs: []result.Run{
		{Labels: map[string]string{"datapath": "baseline", "path": "node-to-node", "test": "tcp_rr", "flows": "1"}, Summary: sum(100, 98, 102)},
		{Labels: map[string]string{"datapath": "wide", "path": "cross-node", "test": "tcp_rr", "flows": "1"}, Summary: sum(92, 80, 104)},
		{Labels: map[string]string{"datapath": "tight", "path": "cross-node", "test": "tcp_rr", "flows": "1"}, Summary: sum(95, 94, 96)},
	}}
	m := newModel(set)
	if got := m.grade("wide", "cross-node", "tcp_rr").text(); got != "Good–Very good (92 %)" {
		t.Errorf("wide interval: %q", got)
	}
	if got := m.grade("tight", "cross-node", "tcp_rr").text(); got != "Very good (95 %)" {
		t.Errorf("tight interval: %q", got)
	}
}

// Grade colours run in order: each grade's background is "warmer" than
// the one before (green → yellow-green → orange → red).
func TestGradeColoursInOrder(t *testing.T) {
	hue := func(hex string) float64 {
		var r, g, b int
		if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
			t.Fatal(err)
		}
		// The share of green in red+green orders green → red.
		return float64(g) / float64(r+g)
	}
	prev := 2.0
	for _, g := range gradeOrder {
		h := hue(gradeStyles[g].BG)
		if h >= prev {
			t.Errorf("%s (%s) is not further towards red than the grade before", g, gradeStyles[g].BG)
		}
		prev = h
	}
}

func TestNoBaselineNote(t *testing.T) {
	set := loadFixture(t, "results-evidence.json")
	var runs []result.Run
	for _, r := range set.Runs {
		if r.Labels["datapath"] != BaselineDatapath {
			runs = append(runs, r)
		}
	}
	set.Runs = runs
	var buf bytes.Buffer
	if err := Text(&buf, set, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, NoBaselineNote) {
		t.Errorf("no-baseline note missing:\n%s", out[:min(len(out), 2000)])
	}
	if utf8.RuneCountInString(NoBaselineNote) > TerminalWidth {
		t.Errorf("the note is longer than one line: %d", utf8.RuneCountInString(NoBaselineNote))
	}
	if !strings.Contains(out, "no conntrack: 0 entries") {
		t.Error("the why of datapaths should stay without a baseline (count evidence needs none)")
	}
}

// Terminal output fits TerminalWidth columns.
func TestTextFitsWidth(t *testing.T) {
	for _, name := range []string{"results.json", "results-evidence.json"} {
		var buf bytes.Buffer
		if err := Text(&buf, loadFixture(t, name), false); err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(buf.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > TerminalWidth {
				t.Errorf("%s: line %d is %d columns: %q", name, i+1, n, line)
			}
		}
		if n := strings.Count(buf.String(), "has no netkit"); n != 2 {
			// once in Datapaths (status), once in Skipped
			t.Errorf("%s: netkit reason printed %d times, want 2 (datapaths table and skipped list)", name, n)
		}
	}
}

func TestTextTableFit(t *testing.T) {
	long := strings.Repeat("word ", 20)
	tb := TextTable{
		Header: []string{"Name", "Reason", "A", "B", "C"},
		Right:  []bool{false, false, true, true, true},
		Rows: [][]string{
			{"one", "skipped: " + long, strings.Repeat("1", 30), strings.Repeat("2", 30), strings.Repeat("3", 30)},
			{"two", "short", "1", "2", "3"},
			{"three", "skipped: " + long, "1", "2", "3"},
		},
	}
	var buf bytes.Buffer
	if err := tb.WriteText(&buf, 80, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, line := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(line) > 80 {
			t.Errorf("line too wide: %q", line)
		}
	}
	for _, want := range []string{"skipped [1]", "[1] word word", "(part 1 of 2)", "(part 2 of 2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "[1] word") != 1 || strings.Contains(out, "[2]") {
		t.Errorf("equal texts must share one footnote:\n%s", out)
	}
	// The key column is repeated in each part.
	if strings.Count(out, "three") != 2 {
		t.Errorf("key column not repeated:\n%s", out)
	}
}

func TestWarningCounts(t *testing.T) {
	got := WarningCounts(loadFixture(t, "results.json"))
	want := []string{
		"interval is the range of the repeats (fewer than 6): 575 values",
		"noisy (CoV above 10 %): 6 values",
		"too few repeats (fewer than 5): 6 values",
		"outlying repeats (more than 5×MAD and 5 % from the median): 3 values",
		"failed repeats: 1 run",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("WarningCounts =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A change against the baseline is stated only when its interval excludes
// no change: noise is not evidence.
func TestWhyNoisyChangeLeftOut(t *testing.T) {
	run := func(dp, path string, vals ...float64) result.Run {
		r := result.Run{Labels: map[string]string{"datapath": dp, "path": path, "test": "tcp_rr", "flows": "1", "mtu": "1500"}}
		for i, v := range vals {
			r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: map[string]float64{result.TransPerSec: 1000, result.LatencyUsP99: v}})
		}
		return r
	}
	for _, tt := range []struct {
		name string
		dp   []float64
		want bool
	}{
		{"clear", []float64{80, 81, 79, 80, 82}, true},
		{"noisy", []float64{20, 300, 80, 60, 140}, false},
	} {
		set := &result.Set{Schema: result.SchemaResults, Runs: []result.Run{
			run("baseline", "node-to-node", 50, 51, 49, 50, 52),
			run("dp", "cross-node", tt.dp...),
		}}
		got := strings.Join(newModel(set).why("dp"), "; ")
		if strings.Contains(got, "p99 latency") != tt.want {
			t.Errorf("%s: why = %q, stated = %v, want %v", tt.name, got, !tt.want, tt.want)
		}
	}
}

// The ratio's interval comes from the repeats (the Hodges–Lehmann
// interval, symmetric about the ratio of medians) when there are enough of
// them, and from the two medians' intervals in quadrature when not.
func TestRatioLog(t *testing.T) {
	run := func(dp string, vals ...float64) *result.Run {
		r := &result.Run{Labels: map[string]string{"datapath": dp, "path": "cross-node", "test": "tcp_rr", "flows": "1"}}
		for i, v := range vals {
			r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: map[string]float64{result.TransPerSec: v}})
		}
		return r
	}
	base := run("baseline", 100, 102, 98, 101, 99, 103, 97, 100, 104, 96, 100, 101)
	// 12 against 12, the datapath 20 % slower with the same spread: the
	// interval is the shift's, a few percent.
	dp := run("dp", 80, 81.6, 78.4, 80.8, 79.2, 82.4, 77.6, 80, 83.2, 76.8, 80, 80.8)
	lr, hw, ok := ratioLog(dp, base, result.TransPerSec)
	if !ok || math.Abs(math.Exp(lr)-0.8) > 1e-9 {
		t.Fatalf("ratio %v ok %v, want 0.8", math.Exp(lr), ok)
	}
	c, err := stats.ChangeInterval(Values(base, result.TransPerSec), Values(dp, result.TransPerSec), stats.Confidence)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Max(lr-math.Log(c.Lo), math.Log(c.Hi)-lr); math.Abs(hw-want) > 1e-12 || hw <= 0 || hw > 0.05 {
		t.Errorf("half-width %v, want the Hodges–Lehmann interval's %v (under 5 %%)", hw, want)
	}
	sd, sb := stats.Summarize(Values(dp, result.TransPerSec)), stats.Summarize(Values(base, result.TransPerSec))
	if q := math.Hypot(logHalfWidth(sd), logHalfWidth(sb)); hw >= q {
		t.Errorf("the Hodges–Lehmann half-width %v is not narrower than the quadrature's %v", hw, q)
	}
	// 3 against 3 has no 95 % Mann–Whitney interval: the quadrature bound.
	b3, d3 := run("baseline", 100, 90, 110), run("dp", 80, 70, 90)
	lr, hw, ok = ratioLog(d3, b3, result.TransPerSec)
	s3d, s3b := stats.Summarize(Values(d3, result.TransPerSec)), stats.Summarize(Values(b3, result.TransPerSec))
	if !ok || math.Abs(hw-math.Hypot(logHalfWidth(s3d), logHalfWidth(s3b))) > 1e-12 {
		t.Errorf("3 against 3: half-width %v, want the quadrature's", hw)
	}
	_ = lr
	// A missing median: no ratio.
	if _, _, ok := ratioLog(run("dp"), base, result.TransPerSec); ok {
		t.Error("a run without values has a ratio")
	}
}
