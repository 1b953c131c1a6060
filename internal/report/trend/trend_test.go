package trend_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/internal/report/trend"
	"github.com/cnibench/cnibench/internal/report/trend/trendtest"
	"github.com/cnibench/cnibench/pkg/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func points(sets []*result.Set) []trend.Point {
	out := make([]trend.Point, len(sets))
	for i, s := range sets {
		out[i] = trend.Point{Name: s.Tool.Version, Set: s}
	}
	return out
}

// stepSeries: 12 nightly points, bridge's throughput and transaction rate
// drop 12 % from the 9th point on, veth-routing stays flat.
func stepSeries() []*result.Set {
	return trendtest.Series(trendtest.Spec{
		Datapaths: []string{"bridge", "veth-routing"},
		Tests:     []string{result.TestTCPStream, result.TestTCPRR},
		Levels:    trendtest.Step(12, 8, 0.88),
		Affected:  []string{"bridge"},
		Seed:      7,
	})
}

func analyze(t *testing.T, sets []*result.Set, o trend.Options) *trend.Trend {
	t.Helper()
	tr, err := trend.Analyze(points(sets), o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestStepFlagged(t *testing.T) {
	tr := analyze(t, stepSeries(), trend.Options{})
	var got []string
	for _, c := range tr.Changes() {
		got = append(got, fmt.Sprintf("%s %s @%d %+.0f%% better=%d", c.Series.Labels["datapath"], c.Series.Metric, c.Index, c.DeltaPct, c.Better))
		if c.P > 0.01 {
			t.Errorf("%s: Mann–Whitney p = %v on 40 against 20 clearly shifted repeats, want < 0.01", c.Series.Metric, c.P)
		}
	}
	want := []string{
		"bridge throughput_bits_per_sec @8 -12% better=-1",
		"bridge trans_per_sec @8 -12% better=-1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("flagged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(tr.Series); n != 2*(2+3) {
		t.Errorf("%d series, want 10 (2 datapaths × (2 stream + 3 rr metrics))", n)
	}
}

func TestImprovementIsGreen(t *testing.T) {
	sets := trendtest.Series(trendtest.Spec{Levels: trendtest.Step(10, 4, 1.2), Seed: 3})
	tr := analyze(t, sets, trend.Options{Metrics: []string{result.ThroughputBitsPerSec}})
	cs := tr.Changes()
	if len(cs) != 1 || cs[0].Better != 1 || cs[0].Index != 4 {
		t.Fatalf("changes %+v, want one improvement at 4", cs)
	}
	var b bytes.Buffer
	if err := tr.HTML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<g class="cp improvement">`) || !strings.Contains(b.String(), html.EscapeString(trend.ChangeLabel(cs[0].Change))) {
		t.Error("the chart lacks the green improvement mark")
	}
}

func TestMatch(t *testing.T) {
	// Every point's runs carry its own version label: matched on all
	// labels no cell spans two points; --match without it joins them.
	sets := trendtest.Series(trendtest.Spec{Levels: trendtest.Step(6, 3, 0.8),
		Labels: func(i int) map[string]string { return map[string]string{"cni_version": fmt.Sprint("1.", i)} }})
	all := analyze(t, sets, trend.Options{Metrics: []string{result.ThroughputBitsPerSec}})
	if len(all.Series) != 6 || len(all.Changes()) != 0 {
		t.Errorf("on all labels: %d series and %d changes, want 6 one-point series and none", len(all.Series), len(all.Changes()))
	}
	m := analyze(t, sets, trend.Options{Metrics: []string{result.ThroughputBitsPerSec}, Match: []string{"datapath", "path", "test", "flows"}})
	if len(m.Series) != 1 {
		t.Fatalf("with --match: %d series, want 1", len(m.Series))
	}
	if _, ok := m.Series[0].Labels["cni_version"]; ok {
		t.Error("the projected labels keep cni_version")
	}
}

func TestGap(t *testing.T) {
	sets := trendtest.Series(trendtest.Spec{Levels: trendtest.Step(11, 5, 0.7), Seed: 9})
	sets[2].Runs = nil // the cell is missing at point 3
	tr := analyze(t, sets, trend.Options{Metrics: []string{result.ThroughputBitsPerSec}})
	s := tr.Series[0]
	if s.Samples[2].Present {
		t.Error("point 3 has no run but its sample is present")
	}
	if len(s.Changes) != 1 || s.Changes[0].Index != 5 {
		t.Errorf("changes %+v, want one at index 5 (point 6)", s.Changes)
	}
}

func TestErrors(t *testing.T) {
	three := trendtest.Series(trendtest.Spec{Levels: []float64{1, 1, 1}, Datapaths: []string{"bridge", "bridge"}})
	tests := []struct {
		name string
		pts  []trend.Point
		o    trend.Options
		want string
	}{
		{"two points", points(three[:2]), trend.Options{}, "at least 3 results files"},
		{"unknown metric", points(trendtest.Series(trendtest.Spec{Levels: []float64{1, 1, 1}})), trend.Options{Metrics: []string{"nope"}}, "--metrics nope"},
		{"ambiguous match", points(trendtest.Series(trendtest.Spec{Levels: []float64{1, 1, 1}, Datapaths: []string{"a", "b"}})), trend.Options{Match: []string{"test"}}, "--match test: point v0.0.0 has several runs"},
		{"alpha", points(three), trend.Options{Alpha: 2}, "--alpha 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := trend.Analyze(tt.pts, tt.o)
			var ue *trend.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want a one-line usage error containing %q", err, tt.want)
			}
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	reporttest.Golden(t, path, got, *update)
}

var svgRE = regexp.MustCompile(`<svg [^>]*class="chart chart-trend"[^>]*data-points="(\d+)"`)

func TestGolden(t *testing.T) {
	tr := analyze(t, stepSeries(), trend.Options{})
	var md, page bytes.Buffer
	if err := tr.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := tr.HTML(&page); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/trend.md.golden", md.Bytes())
	checkGolden(t, "testdata/trend.html.golden", page.Bytes())

	// Deterministic: a second analysis renders the same bytes.
	var again bytes.Buffer
	if err := analyze(t, stepSeries(), trend.Options{}).HTML(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), page.Bytes()) {
		t.Error("two renderings of one series differ")
	}
	h := page.String()
	if m := svgRE.FindAllStringSubmatch(h, -1); len(m) != len(tr.Series) {
		t.Errorf("%d charts, want one per series (%d)", len(m), len(tr.Series))
	}
	if strings.Contains(h, "http://") && strings.Count(h, "http://") != strings.Count(h, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("the page refers to the network")
	}
	if !strings.Contains(md.String(), "| bridge, cross-node, tcp_stream, 1 flow | Throughput | v0.7.0 → v0.8.0 |") {
		t.Error("the Markdown shift table lacks bridge's throughput change at v0.8.0")
	}
}
