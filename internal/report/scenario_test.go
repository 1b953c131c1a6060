package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cnibench/cnibench/pkg/result"
)

// egressShapeFile is the egress-filter scenario's legacy shape as a
// document carries it (internal/cli/suite's tests check that it is the
// one the scenario registers): the report's tests link no scenario.
const egressShapeFile = "testdata/shape-egress-filter.json"

// registerEgressShape registers it as the scenario would, once per test
// binary.
var registerEgressShape = sync.OnceValue(func() error {
	b, err := os.ReadFile(egressShapeFile)
	if err != nil {
		return err
	}
	var sh result.ScenarioShape
	if err := json.Unmarshal(b, &sh); err != nil {
		return fmt.Errorf("%s: %w", egressShapeFile, err)
	}
	result.RegisterLegacyShape(sh)
	return nil
})

// needEgressShape makes documents without a shape draw egress-filter runs
// as cnibench, which links the scenario, does.
func needEgressShape(t *testing.T) {
	t.Helper()
	if err := registerEgressShape(); err != nil {
		t.Fatal(err)
	}
}

// egressFixture is a small egress-filter result (written without a shape,
// drawn with the scenario's legacy shape: needEgressShape): mechanisms none and ipset
// at 10 and 1000 rules (five repeats each), the max-rate and fixed-rate
// udp_stream cells and tcp_rr, ipset at 1000000 rules too large, and
// one failed point (none at 1000 rules, tcp_rr).
func egressFixture() *result.Set {
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	s := &result.Set{
		Schema: result.SchemaResults, Start: t0, End: t0.Add(time.Hour),
		Config:    map[string]string{"scenario": "egress-filter"},
		Datapaths: []result.Datapath{{Name: "veth-routing", Description: "routed veth pairs"}},
		Skipped: []result.Skip{{
			Labels: map[string]string{"scenario": "egress-filter", "mechanism": "ipset", "rules": "1000000", "traversal": "every-packet"},
			Reason: "too large: ipset holds at most 65536 entries per set here",
		}},
	}
	type cellDef struct {
		test, rate string
	}
	cells := []cellDef{{"udp_stream", ""}, {"udp_stream", "1G"}, {"tcp_rr", ""}}
	for _, mech := range []string{"none", "ipset"} {
		for _, rules := range []string{"10", "1000"} {
			n := 1.0
			if rules == "1000" {
				n = 2
			}
			cost := 0.0
			if mech == "ipset" {
				cost = 1
			}
			for _, c := range cells {
				l := map[string]string{
					"datapath": "veth-routing", "path": "cross-node", "flows": "1", "mtu": "1500",
					"scenario": "egress-filter", "mechanism": mech, "rules": rules, "traversal": "every-packet", "test": c.test,
				}
				if c.rate != "" {
					l["rate"] = c.rate
				}
				run := result.Run{Labels: l}
				for i := 0; i < 5; i++ {
					jit := 1 + 0.01*float64(i-2)
					m := map[string]float64{result.HostCPUPct: 150 * jit * (1 + 0.1*cost*n)}
					if mech == "ipset" {
						m["filter_setup_seconds"] = 0.02 * n * n * jit
						m["filter_update_add_seconds"] = 0.0003 * n * jit
						m["filter_update_remove_seconds"] = 0.0002 * n * jit
						m["filter_kernel_bytes"] = 1000 * n * n
						m["filter_loader_rss_bytes"] = 2 << 20
					}
					m["filter_teardown_seconds"] = (0.000002 + 0.01*cost*n) * jit
					switch {
					case c.test == "tcp_rr":
						m[result.TransPerSec] = 40000 * jit / (1 + 0.2*cost*n)
						m[result.LatencyUsP50] = 23 * jit * (1 + 0.2*cost*n)
						m[result.LatencyUsP99] = 60 * jit * (1 + 0.3*cost*n)
					case c.rate != "":
						m[result.ThroughputBitsPerSec] = 1e9 * jit
						m[result.DatagramsReceivedPerSec] = 85000 * jit
						m[result.CPUPctPer100Gbit] = 15000 * jit * (1 + 0.1*cost*n)
					default:
						m[result.ThroughputBitsPerSec] = 2e9 * jit / (1 + 0.1*cost*n)
						m[result.DatagramsReceivedPerSec] = 170000 * jit / (1 + 0.1*cost*n)
					}
					rep := result.Repeat{Index: i, Start: t0.Add(time.Duration(i) * time.Minute), DurationSec: 1, Metrics: m}
					if mech == "none" && rules == "1000" && c.test == "tcp_rr" {
						rep.Metrics, rep.Error = nil, "prepare: enforcement not proven"
					}
					run.Repeats = append(run.Repeats, rep)
				}
				run.Summary = result.SummarizeRepeats(run.Repeats)
				s.Runs = append(s.Runs, run)
			}
		}
	}
	return s
}

func TestFilterScenarioGolden(t *testing.T) {
	needEgressShape(t)
	set := egressFixture()
	var md, txt, html bytes.Buffer
	if err := Markdown(&md, set); err != nil {
		t.Fatal(err)
	}
	if err := Text(&txt, set, false); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, set); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/scenario-egress.md.golden", md.Bytes())
	checkGolden(t, "testdata/scenario-egress.txt.golden", txt.Bytes())

	for i, line := range strings.Split(txt.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > TerminalWidth {
			t.Errorf("text line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	sec := md.String()
	if i := strings.Index(sec, "## Scenario egress-filter"); i >= 0 {
		sec = sec[i:]
	} else {
		t.Fatal("no scenario section in the Markdown report")
	}
	for _, want := range []string{
		"| none |", "| ipset |", // one row per mechanism
		"Set-up until enforced by rules", "Update: add one CIDR", "Update: remove one CIDR",
		"Tear-down", "Kernel memory of the rules", "Loader peak RSS",
		"Packet rate (received)", "Latency p50", "Latency p99", "CPU % needed for 100 Gbit/s",
		"udp\\_stream at 1 Gbit/s offered", "udp\\_stream at maximum rate",
		"| too large |", "| failed |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("scenario section lacks %q", want)
		}
	}
	// The failed point stays visible; none has no set-up row (nothing loaded).
	if strings.Contains(sec, "| none | — | — | — |") {
		t.Error("a row without any value is shown")
	}

	// HTML: every scenario chart is a log-x line chart with one series per
	// mechanism, and the too-large point is named under its chart.
	doc := html.String()
	re := regexp.MustCompile(`<svg [^>]*class="chart chart-scenario" id="([^"]+)" data-points="(\d+)"`)
	charts := re.FindAllStringSubmatch(doc, -1)
	// 5 filter metrics with values (set-up, add, remove, tear-down, kernel,
	// RSS = 6) + udp max (tput, pps, cpu = 3) + udp 1G (tput, pps, cpu/100G,
	// cpu = 4) + tcp_rr (rate, p50, p99, cpu = 4).
	if len(charts) != 17 {
		t.Errorf("%d scenario charts, want 17", len(charts))
	}
	ids := map[string]bool{}
	for _, c := range charts {
		if ids[c[1]] {
			t.Errorf("duplicate chart id %s", c[1])
		}
		ids[c[1]] = true
		if c[2] == "0" {
			t.Errorf("chart %s is empty", c[1])
		}
	}
	if !ids["scenario-egress-filter-udp-stream-rate1g-1f-cross-node-cpu-pct-per-100gbit"] {
		t.Errorf("no fixed-rate CPU chart; ids: %v", ids)
	}
	if !strings.Contains(doc, "ipset 1M: too large") {
		t.Error("the too-large point is not named under the charts")
	}
}

func TestRateText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"1G", "1 Gbit/s"}, {"500M", "500 Mbit/s"}, {"1000", "1000 bit/s"}, {"fast", "fast bit/s"},
	} {
		if got := rateText(tt.in); got != tt.want {
			t.Errorf("rateText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScaleForSeconds(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{2.5, "2.50 s"}, {0.0123, "12.3 ms"}, {0.000045, "45.0 µs"},
	} {
		if got := Value("filter_setup_seconds", tt.v); got != tt.want {
			t.Errorf("Value(%g s) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// A point whose deny was not enforced in a later repeat (the suite then
// stops its repeats and records it skipped) shows what its earlier
// repeats measured, how many, and why it stopped — not "not enforced"
// alone, which hid the repeats that held.
func TestFilterScenarioPointStoppedAfterMeasuredRepeats(t *testing.T) {
	needEgressShape(t)
	set := egressFixture()
	for i := range set.Runs {
		r := &set.Runs[i]
		if r.Labels["mechanism"] == "ipset" && r.Labels["rules"] == "10" {
			r.Repeats = r.Repeats[:2]
			r.Summary = result.SummarizeRepeats(r.Repeats)
		}
	}
	set.Skipped = append(set.Skipped, result.Skip{
		Labels: map[string]string{"scenario": "egress-filter", "mechanism": "ipset", "rules": "10", "traversal": "every-packet"},
		Reason: "not enforced: the API server accepted 1 object(s) but 10.0.0.1:12870 answered 10 of 10 probes",
	})
	var txt bytes.Buffer
	if err := Text(&txt, set, false); err != nil {
		t.Fatal(err)
	}
	var setup string
	for _, line := range strings.Split(txt.String(), "\n") {
		if strings.HasPrefix(line, "ipset ") && setup == "" {
			setup = line
		}
	}
	if !strings.Contains(setup, "ms") || !strings.Contains(setup, "‡") {
		t.Errorf("ipset's set-up row %q: want its 2 repeats' median, marked ‡", setup)
	}
	if !strings.Contains(txt.String(), "ipset at 10 rules: 2 repeats, then not enforced") {
		t.Errorf("no note says ipset at 10 rules held in 2 repeats, then was not enforced:\n%s", txt.String())
	}
	// The point whose every repeat was skipped still says only why.
	if !strings.Contains(txt.String(), "too large") {
		t.Errorf("the point skipped outright lost its reason:\n%s", txt.String())
	}
}

// A document whose own shape predates a per-point metric the scenario now
// draws (the cluster's policy objects) shows it when its runs measured
// it; a metric no run measured adds no table; a metric it lists untitled
// gets the scenario's title.
func TestDocumentShapeGainsNewerPointMetrics(t *testing.T) {
	needEgressShape(t)
	set := egressFixture()
	now, _ := result.LegacyShape("egress-filter")
	old := now
	sw := *now.Sweep
	sw.PointMetrics = []string{"filter_setup_seconds", "filter_teardown_seconds"}
	old.Sweep = &sw
	// The document titled its set-up only: its tear-down gets the
	// scenario's title.
	old.MetricTitles = map[string]string{"filter_setup_seconds": "Set-up until enforced"}
	set.Shape = &old
	for i := range set.Runs {
		if set.Runs[i].Labels["mechanism"] == "ipset" {
			for j := range set.Runs[i].Repeats {
				if m := set.Runs[i].Repeats[j].Metrics; m != nil {
					m["policy_objects"] = 3
				}
			}
			set.Runs[i].Summary = result.SummarizeRepeats(set.Runs[i].Repeats)
		}
	}
	var txt bytes.Buffer
	if err := Text(&txt, set, false); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	if !strings.Contains(out, "Policy objects sent by rules") {
		t.Errorf("the measured policy_objects has no table:\n%s", out)
	}
	if strings.Contains(out, "CNI pods' CPU while creating") {
		t.Errorf("a metric no run measured got a table")
	}
	if i, j := strings.Index(out, "Tear-down by rules"), strings.Index(out, "Policy objects sent by rules"); i < 0 || j < i {
		t.Errorf("the document's own metrics do not come first")
	}
	if len(set.Shape.Sweep.PointMetrics) != 2 {
		t.Errorf("the document's shape was changed: %v", set.Shape.Sweep.PointMetrics)
	}
}
