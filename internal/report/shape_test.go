package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// shapedFixture is a scenario this report has no table for, with the
// shape its results carry: runs of every combination of the labels in
// dims, each with the metrics given.
func shapedFixture(shape *result.ScenarioShape, dims map[string][]string, tests []string, metrics []string) *result.Set {
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	s := &result.Set{
		Schema: result.SchemaResults, Start: t0, End: t0.Add(time.Hour),
		Config:    map[string]string{"scenario": shape.Scenario},
		Datapaths: []result.Datapath{{Name: "veth-routing", Description: "routed veth pairs"}},
		Shape:     shape,
	}
	combos := []map[string]string{{}}
	for _, k := range sortedKeys(dims) {
		var next []map[string]string
		for _, c := range combos {
			for _, v := range dims[k] {
				n := map[string]string{k: v}
				for ck, cv := range c {
					n[ck] = cv
				}
				next = append(next, n)
			}
		}
		combos = next
	}
	for ci, c := range combos {
		for _, test := range tests {
			l := map[string]string{"datapath": "veth-routing", "path": "cross-node", "flows": "1", "mtu": "1500", "scenario": shape.Scenario, "test": test}
			for k, v := range c {
				l[k] = v
			}
			run := result.Run{Labels: l}
			for i := range 5 {
				jit := 1 + 0.01*float64(i-2)
				m := map[string]float64{}
				for mi, name := range metrics {
					m[name] = float64(10*(ci+1)+mi) * jit
				}
				run.Repeats = append(run.Repeats, result.Repeat{Index: i, Start: t0.Add(time.Duration(i) * time.Minute), DurationSec: 1, Metrics: m})
			}
			run.Summary = result.SummarizeRepeats(run.Repeats)
			s.Runs = append(s.Runs, run)
		}
	}
	return s
}

func sortedKeys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// sweepShape and categoricalShape are two scenarios the report knows
// nothing about but what their results say.
var (
	sweepShape = result.ScenarioShape{
		Scenario: "dns-cache",
		Sweep: &result.SweepShape{
			X: "records", XText: "records", Series: "resolver", SeriesHeader: "Resolver", Baseline: "none",
			Intro:        "Every metric against the number of cached records (log scale), one line per resolver (none = no cache, dashed).",
			PointMetrics: []string{"cache_fill_us"},
			PointLead:    "Filling the cache: time until every record answers from it.",
		},
		MetricTitles: map[string]string{"cache_fill_us": "Filling the cache"},
	}
	categoricalShape = result.ScenarioShape{
		Scenario: "vpn-mesh",
		Categorical: &result.CategoricalShape{
			Groups: []string{"mesh", "cipher"}, GroupHeaders: []string{"Mesh", "Cipher"},
			Series: "offload", SeriesHeader: "Offload",
			Intro:   "Pod traffic through a mesh of tunnels; bars: with and without offload.",
			Metrics: map[string][]string{"tcp_rr": {result.TransPerSec, "mesh_peers_cpu_pct"}},
		},
		MetricTitles: map[string]string{"mesh_peers_cpu_pct": "Peers' CPU"},
	}
)

// A scenario the report has no table for is drawn from the shape its
// results carry: the sweep against its x label with its series, titles and
// per-point costs, the categorical one by its groups and series with its
// metrics per test.
func TestShapedScenarioGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		set    *result.Set
		want   []string
	}{
		{
			"testdata/scenario-shape-sweep", shapedFixture(&sweepShape,
				map[string][]string{"resolver": {"none", "lru", "arc"}, "records": {"10", "1000", "100000"}},
				[]string{"tcp_rr"}, []string{result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99, result.HostCPUPct, "cache_fill_us"}),
			[]string{"## Scenario dns-cache", "Every metric against the number of cached records", "Filling the cache by records, scenario dns-cache",
				"| Resolver | records 10 | records 1k | records 100k |", "| none |", "| lru |", "| arc |"},
		},
		{
			"testdata/scenario-shape-categorical", shapedFixture(&categoricalShape,
				map[string][]string{"mesh": {"full", "hub"}, "cipher": {"aes", "chacha"}, "offload": {"off", "on"}},
				[]string{"tcp_rr", "tcp_stream"}, []string{result.TransPerSec, result.ThroughputBitsPerSec, result.HostCPUPct, "mesh_peers_cpu_pct"}),
			[]string{"## Scenario vpn-mesh", "Pod traffic through a mesh of tunnels", "| Mesh | Cipher | Offload | Transaction rate | Peers' CPU |",
				"| full | aes | off |"},
		},
	} {
		var md, txt bytes.Buffer
		if err := Markdown(&md, tc.set); err != nil {
			t.Fatal(err)
		}
		if err := Text(&txt, tc.set, false); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, tc.golden+".md.golden", md.Bytes())
		checkGolden(t, tc.golden+".txt.golden", txt.Bytes())
		for _, w := range tc.want {
			if !strings.Contains(md.String(), w) {
				t.Errorf("%s: the report lacks %q", tc.golden, w)
			}
		}
		// Without its shape the same runs are drawn generically: the
		// shape is what drew them.
		bare := *tc.set
		bare.Shape = nil
		var plain bytes.Buffer
		if err := Markdown(&plain, &bare); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain.String(), tc.set.Shape.MetricTitles[firstKey(tc.set.Shape.MetricTitles)]) {
			t.Errorf("%s: drawn with the shape's titles without its shape", tc.golden)
		}
		// A shape naming another scenario is not applied.
		other := *tc.set
		sh := *tc.set.Shape
		sh.Scenario = "other"
		other.Shape = &sh
		var o bytes.Buffer
		if err := Markdown(&o, &other); err != nil {
			t.Fatal(err)
		}
		if o.String() != plain.String() {
			t.Errorf("%s: a shape for another scenario changed the report", tc.golden)
		}
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// Documents written before results carried a shape draw as before (the
// golden files of TestFilterScenarioGolden); the same document with the
// shape its scenario now writes draws identically.
func TestLegacyShapeEqualsDocumentShape(t *testing.T) {
	needEgressShape(t)
	set := egressFixture()
	if set.Shape != nil {
		t.Fatal("the legacy fixture has a shape")
	}
	// The fixture as an old results.json: no "shape" key.
	var buf bytes.Buffer
	if err := result.Write(&buf, set); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(`"shape"`)) {
		t.Error("a set without a shape writes one")
	}
	old, err := result.Decode(buf.Bytes())
	if err != nil || old.Shape != nil {
		t.Fatalf("decoded %v, %v", old.Shape, err)
	}
	sh, ok := legacyShape("egress-filter", ptrs(old.Runs))
	if !ok || sh.Sweep == nil || sh.Sweep.Series != "mechanism" {
		t.Fatalf("legacy shape %+v", sh)
	}
	// Through JSON, as the suite writes it.
	set.Shape = &sh
	buf.Reset()
	if err := result.Write(&buf, set); err != nil {
		t.Fatal(err)
	}
	shaped, err := result.Decode(buf.Bytes())
	if err != nil || shaped.Shape == nil {
		t.Fatalf("decoded %v, %v", shaped, err)
	}
	var md, txt bytes.Buffer
	if err := Markdown(&md, shaped); err != nil {
		t.Fatal(err)
	}
	if err := Text(&txt, shaped, false); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/scenario-egress.md.golden", md.Bytes())
	checkGolden(t, "testdata/scenario-egress.txt.golden", txt.Bytes())
	var js map[string]any
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil || js["shape"] == nil {
		t.Errorf("no shape in the document: %v", err)
	}
}

func ptrs(runs []result.Run) []*result.Run {
	out := make([]*result.Run, len(runs))
	for i := range runs {
		out[i] = &runs[i]
	}
	return out
}

// A document without a shape is drawn with the shape its scenario
// registered only when its runs carry the shape's key label (a sweep's
// series): an egress-filter sweep of rules alone, from before the
// mechanisms, is drawn generically, and so is a scenario that registered
// none.
func TestLegacyShapeNeedsItsKeyLabel(t *testing.T) {
	needEgressShape(t)
	runs := ptrs(egressFixture().Runs)
	if sh, ok := legacyShape("egress-filter", runs); !ok || sh.Scenario != "egress-filter" || sh.Sweep == nil {
		t.Errorf("egress-filter runs with mechanisms: %+v, %v", sh, ok)
	}
	if _, ok := legacyShape("dns-cache", runs); ok {
		t.Error("a scenario without a registered shape has one")
	}
	for _, r := range runs {
		delete(r.Labels, "mechanism")
	}
	if sh, ok := legacyShape("egress-filter", runs); ok {
		t.Errorf("egress-filter runs without mechanisms: %+v", sh)
	}
}
