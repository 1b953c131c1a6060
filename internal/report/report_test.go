package report

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

var update = flag.Bool("update", false, "rewrite testdata fixtures and golden files")

// fixtures: the synthetic sets the report and compare tests read. They
// are generated (deterministically) by reporttest and checked in so that
// other tests and humans can use them.
var fixtures = map[string]reporttest.Options{
	"results.json": {Seed: 1},
	// A second run of the suite: ebpf-host-routing got faster, vxlan slower.
	"results-new.json": {Seed: 2, Factor: map[string]float64{"ebpf-host-routing": 1.07, "vxlan": 0.9}},
	// results.json with the lab's datapath evidence (the report's "why").
	"results-evidence.json": {Seed: 1, Evidence: true},
}

func TestFixturesUpToDate(t *testing.T) {
	for name, o := range fixtures {
		var buf bytes.Buffer
		if err := result.Write(&buf, reporttest.Set(o)); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("testdata", name), buf.Bytes())
	}
}

// checkGolden compares got with the golden file (reporttest.Golden, with
// this package's -update).
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	reporttest.Golden(t, path, got, *update)
}

func loadFixture(t *testing.T, name string) *result.Set {
	t.Helper()
	s, err := result.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGoldenMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := Markdown(&buf, loadFixture(t, "results-evidence.json")); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/report.md.golden", buf.Bytes())
}

func TestGoldenText(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, loadFixture(t, "results-evidence.json"), false); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("\x1b[")) {
		t.Error("Text without colour contains ANSI escapes")
	}
	checkGolden(t, "testdata/report.txt.golden", buf.Bytes())
}

func TestTextColor(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, loadFixture(t, "results-evidence.json"), true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("\x1b[1;32mVery good")) {
		t.Error("coloured text lacks a coloured grade")
	}
}

// expectedCharts for results.json: per test and flow count a primary and
// a CPU chart (5 tests × 2 flow counts), latency charts for the 3
// rr/crr/http tests × 2 flow counts × 2 paths, one MTU sweep and one
// egress-filter chart.
var expectedCharts = map[string]int{
	"primary":  10,
	"cpu":      10,
	"latency":  12,
	"mtu":      1,
	"scenario": 1,
}

var chartRE = reporttest.ChartRE

// checkCharts asserts the chart counts and that no chart is empty, in an
// HTML document (the file or Chromium's DOM dump).
func checkCharts(t *testing.T, doc string) {
	t.Helper()
	got := map[string]int{}
	ids := map[string]bool{}
	for _, m := range chartRE.FindAllStringSubmatch(doc, -1) {
		got[m[1]]++
		if ids[m[2]] {
			t.Errorf("duplicate chart id %q", m[2])
		}
		ids[m[2]] = true
		if n, _ := strconv.Atoi(m[3]); n == 0 {
			t.Errorf("chart %s is empty", m[2])
		}
	}
	for k, want := range expectedCharts {
		if got[k] != want {
			t.Errorf("%d %s charts, want %d", got[k], k, want)
		}
	}
	for k := range got {
		if _, ok := expectedCharts[k]; !ok {
			t.Errorf("unexpected chart kind %q", k)
		}
	}
	for _, bad := range []string{"NaN", "Inf", "+Inf", "missing", "%!", "<nil>"} {
		if strings.Contains(doc, bad) {
			i := strings.Index(doc, bad)
			t.Errorf("document contains %q: …%s…", bad, doc[max(0, i-80):min(len(doc), i+80)])
		}
	}
}

func TestHTML(t *testing.T) {
	set := loadFixture(t, "results-evidence.json")
	var a, b bytes.Buffer
	if err := HTML(&a, set); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&b, set); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("HTML output is not deterministic")
	}
	doc := a.String()
	checkCharts(t, doc)
	// Self-contained: no scripts, no external resources.
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "url("} {
		if strings.Contains(strings.ReplaceAll(doc, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("HTML contains %q: not self-contained", bad)
		}
	}
	for _, want := range []string{
		"Very good", "Good", "Fair", "Poor", // graded summary
		"≥ 90 % of the baseline",               // documented thresholds
		"AMD EPYC 7443P",                       // host facts
		"pod TCP/IP → veth → tc eBPF redirect", // packet paths
		"kernel 6.1.0-28-amd64 has no netkit",  // skipped datapath
		"socket buffer too small",              // skipped cell
		"noisy: coefficient of variation",      // noise warning
		"far outside the rest",                 // outlier warning
		"repeat 4 failed",                      // run warning
		"CPU % needed for 100 Gbit/s",          // seed 000 chart
		"CPU µs per transaction",               // seed 000 chart
		"rules (log scale)",                    // scenario chart
		"MTU (bytes)",                          // MTU chart
		"Gbit/s", "k trans/s", "µs",            // units
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if len(doc) > 1<<20 {
		t.Errorf("HTML is %d bytes; expected well under 1 MiB", len(doc))
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	h, m, err := WriteFiles(loadFixture(t, "results.json"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if h != filepath.Join(dir, "report.html") || m != filepath.Join(dir, "report.md") {
		t.Errorf("paths %q %q", h, m)
	}
	for _, p := range []string{h, m} {
		st, err := os.Stat(p)
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %v)", p, err, st)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("dir has %d entries, want 2 (no temporary files left)", len(ents))
	}
}

// A set with one single-repeat run, no baseline, NaN-free zeros and odd
// labels must still render without NaN or panics.
func TestDegenerateSets(t *testing.T) {
	sets := map[string]*result.Set{
		"empty": {Schema: result.SchemaResults},
		"single result": func() *result.Set {
			s, err := result.Decode([]byte(`{"schema":"cnibench/result/v1","config":{"test":"tcp_rr","flows":"1"},
				"repeats":[{"index":0,"duration_sec":10,"metrics":{"trans_per_sec":51234,"latency_us_p99":80,"cpu_us_per_trans":0}}]}`))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}(),
		"zero baseline": {Schema: result.SchemaResults, Runs: []result.Run{
			{Labels: map[string]string{"datapath": "baseline", "path": "node-to-node", "test": "tcp_stream", "flows": "1"},
				Summary: map[string]stats.Summary{"throughput_bits_per_sec": {N: 1}}},
			{Labels: map[string]string{"datapath": "x", "path": "cross-node", "test": "tcp_stream", "flows": "1"},
				Repeats: []result.Repeat{{Metrics: map[string]float64{"throughput_bits_per_sec": math.NaN()}}, {Metrics: map[string]float64{"throughput_bits_per_sec": 1e9}}}},
		}},
	}
	for name, s := range sets {
		t.Run(name, func(t *testing.T) {
			for fname, render := range map[string]func(*bytes.Buffer) error{
				"html": func(b *bytes.Buffer) error { return HTML(b, s) },
				"md":   func(b *bytes.Buffer) error { return Markdown(b, s) },
				"text": func(b *bytes.Buffer) error { return Text(b, s, false) },
			} {
				var buf bytes.Buffer
				if err := render(&buf); err != nil {
					t.Fatalf("%s: %v", fname, err)
				}
				for _, bad := range []string{"NaN", "Inf", "%!"} {
					if strings.Contains(buf.String(), bad) {
						t.Errorf("%s output contains %q", fname, bad)
					}
				}
				if name == "single result" && !strings.Contains(buf.String(), "51.2 k trans/s") {
					t.Errorf("%s output lacks the single run's value:\n%s", fname, buf.String())
				}
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		metric string
		v      float64
		want   string
	}{
		{result.ThroughputBitsPerSec, 38.24e9, "38.2 Gbit/s"},
		{result.ThroughputBitsPerSec, 940e6, "940 Mbit/s"},
		{result.ThroughputBitsPerSec, 0, "0 bit/s"},
		{result.TransPerSec, 52340, "52.3 k trans/s"},
		{result.TransPerSec, 1.02e6, "1.02 M trans/s"},
		{result.TransPerSec, 812, "812 trans/s"},
		{result.LatencyUsP99, 48.14, "48.1 µs"},
		{result.LatencyUsP99, 12345, "12.3 ms"},
		{result.CPUPctPer100Gbit, 245.2, "245 %"},
		{result.CPUUsPerTrans, 7.346, "7.35 µs"},
		{result.LossPct, 0.0123, "0.012 %"},
		{result.LossPct, math.NaN(), "—"},
		{result.ThroughputBitsPerSec, math.Inf(1), "—"},
	}
	for _, tt := range tests {
		if got := Value(tt.metric, tt.v); got != tt.want {
			t.Errorf("Value(%s, %v) = %q, want %q", tt.metric, tt.v, got, tt.want)
		}
	}
	for in, want := range map[float64]string{3.44: "+3.4%", -12.3: "-12.3%", 150: "+150%", math.NaN(): "—", 0.01: "0.0%"} {
		if got := Pct(in); got != want {
			t.Errorf("Pct(%v) = %q, want %q", in, got, want)
		}
	}
}

// An axis names its unit once: not again when the title's closing
// parenthesis names it, still when that parenthesis says something else.
func TestAxisLabel(t *testing.T) {
	pct := Scale{Unit: "%"}
	tests := []struct {
		title, metric string
		sc            Scale
		want          string
	}{
		{"Proxies' CPU (% of a core)", "proxy_cpu_pct", pct, "Proxies' CPU (% of a core)"},
		{"Client CPU (curl, scp + ssh)", result.ClientCPUPct, pct, "Client CPU (curl, scp + ssh) (% of one core)"},
		{"Throughput", result.ThroughputBitsPerSec, Scale{Unit: "Gbit/s"}, "Throughput (Gbit/s)"},
		{"Loss (%)", result.LossPct, pct, "Loss (%)"},
	}
	for _, tt := range tests {
		if got := axisLabel(tt.title, tt.metric, tt.sc); got != tt.want {
			t.Errorf("axisLabel(%q, %s) = %q, want %q", tt.title, tt.metric, got, tt.want)
		}
	}
}

func TestGradeOf(t *testing.T) {
	tests := []struct {
		r    float64
		want Grade
	}{
		{1.2, VeryGood}, {0.9, VeryGood}, {0.89, Good}, {0.75, Good}, {0.74, Fair}, {0.5, Fair}, {0.49, Poor}, {0.01, Poor},
		{0, NoGrade}, {math.NaN(), NoGrade}, {math.Inf(1), NoGrade},
	}
	for _, tt := range tests {
		if got := GradeOf(tt.r); got != tt.want {
			t.Errorf("GradeOf(%v) = %v, want %v", tt.r, got, tt.want)
		}
	}
}

func TestNiceAxis(t *testing.T) {
	for _, max := range []float64{0, 0.003, 1, 7.3, 38.2, 94, 100, 1234, 5e6} {
		top, ticks := yAxis(max)
		if top < max || len(ticks) < 2 || len(ticks) > 12 || ticks[0] != 0 {
			t.Errorf("yAxis(%v) = %v, %v", max, top, ticks)
		}
	}
}
