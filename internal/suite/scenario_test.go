package suite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// filterLike is a scenario with egress-filter's labels and no cells of
// its own (it gets scenario.DefaultCells).
type filterLike struct{ nameOnly }

type nameOnly string

func (n nameOnly) Name() string           { return string(n) }
func (nameOnly) Points() []scenario.Point { return nil }
func (nameOnly) Prepare(context.Context, scenario.Env, scenario.Point) (scenario.Prepared, error) {
	return nil, nil
}
func (nameOnly) Close(context.Context) error { return nil }

func TestScenarioCellLabels(t *testing.T) {
	p := scenario.Point{Labels: map[string]string{"scenario": "egress-filter", "mechanism": "ipset", "rules": "1000", "traversal": "new-connection"}}
	sc := filterLike{"egress-filter"}
	cells := scenarioCells(sc, p, "veth-routing", &depRun{mtu: 1500})
	if len(cells) != len(scenario.DefaultCells()) {
		t.Fatalf("%d cells, want %d", len(cells), len(scenario.DefaultCells()))
	}
	keys := map[string]bool{}
	rated := 0
	for _, c := range cells {
		l := c.labels()
		want := map[string]string{
			"datapath": "veth-routing", "path": "cross-node", "test": c.Test, "flows": "1", "mtu": "1500",
			"scenario": "egress-filter", "mechanism": "ipset", "rules": "1000", "traversal": "new-connection",
		}
		if c.sc.rate != "" {
			rated++
			want[scenario.LabelRate] = c.sc.rate
			if c.Test != engine.UDPStream || c.sc.rate != scenario.FixedRate {
				t.Errorf("rate %q on %s", c.sc.rate, c.Test)
			}
		}
		if !maps.Equal(l, want) {
			t.Errorf("labels %v, want %v", l, want)
		}
		keys[result.LabelKey(l)] = true
		if s := c.String(); !strings.Contains(s, "mechanism=ipset") || !strings.Contains(s, c.Test) {
			t.Errorf("String() = %q", s)
		}
	}
	if rated != 1 || len(keys) != len(cells) {
		t.Errorf("%d fixed-rate cells (want 1), %d distinct label sets (want %d)", rated, len(keys), len(cells))
	}
	// The point's labels are copied, not shared between cells.
	cells[0].sc.labels["rules"] = "x"
	if p.Labels["rules"] != "1000" || cells[1].sc.labels["rules"] != "1000" {
		t.Error("cells share the point's label map")
	}
}

func TestScenarioCellApply(t *testing.T) {
	tests := []struct {
		test     string
		repeat   result.Repeat
		wantRate float64 // datagrams_received_per_sec; 0: absent
	}{
		{engine.UDPStream, result.Repeat{DurationSec: 0.5, Metrics: map[string]float64{result.DatagramsReceived: 1000}}, 2000},
		{engine.UDPStream, result.Repeat{DurationSec: 0, Metrics: map[string]float64{result.DatagramsReceived: 1000}}, 0},
		{engine.TCPRR, result.Repeat{DurationSec: 0.5, Metrics: map[string]float64{result.TransPerSec: 1}}, 0},
	}
	for _, tt := range tests {
		sc := &scenarioCell{metrics: map[string]float64{"filter_setup_seconds": 0.25}, config: map[string]string{"filter_seed": "7"}}
		res := result.Result{Repeats: []result.Repeat{tt.repeat}}
		sc.apply(cell{Test: tt.test}, &res)
		m := res.Repeats[0].Metrics
		if m["filter_setup_seconds"] != 0.25 || res.Config["filter_seed"] != "7" {
			t.Errorf("%s: point metrics/config not attached: %v %v", tt.test, m, res.Config)
		}
		got, ok := m[result.DatagramsReceivedPerSec]
		if (tt.wantRate == 0) == ok || got != tt.wantRate {
			t.Errorf("%s: %s = %v (present %v), want %v", tt.test, result.DatagramsReceivedPerSec, got, ok, tt.wantRate)
		}
	}
	// Outside scenarios nothing changes.
	var none *scenarioCell
	res := result.Result{Repeats: []result.Repeat{{DurationSec: 1, Metrics: map[string]float64{result.DatagramsReceived: 5}}}}
	none.apply(cell{Test: engine.UDPStream}, &res)
	if len(res.Repeats[0].Metrics) != 1 || res.Config != nil {
		t.Errorf("apply without a scenario changed the result: %+v", res)
	}
}

// sized is the suite tests' registered scenario ("sized"): points n=1…
// (--sizes, default 1,10; 1,2 with the quick profile), the default cells,
// its options in the config and a sweep shape.
type sized struct {
	fakeScenario
	sizes []int
	seed  uint64
}

func (s *sized) Name() string { return "sized" }

func (s *sized) Points() []scenario.Point {
	var out []scenario.Point
	for _, n := range s.sizes {
		out = append(out, scenario.Point{Labels: map[string]string{scenario.LabelScenario: "sized", "n": strconv.Itoa(n)}})
	}
	return out
}

func (s *sized) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{{Test: result.TestTCPRR, Flows: 1}}
}

func (s *sized) Config() map[string]string {
	return map[string]string{"sizes": fmt.Sprint(s.sizes), "sized_seed": strconv.FormatUint(s.seed, 10)}
}

func (s *sized) Shape() result.ScenarioShape {
	return result.ScenarioShape{Sweep: &result.SweepShape{X: "n", XText: "things", Series: "kind", SeriesHeader: "Kind", Intro: "Things."}}
}

func init() {
	scenario.Register(scenario.Registration{
		Name: "sized", Usage: "a scenario of the suite's tests",
		Flags: func(fs *pflag.FlagSet) scenario.Builder {
			sizes := fs.String("sizes", "", "sized: comma-separated sizes")
			return func(c scenario.Common) (scenario.Scenario, error) {
				s := &sized{fakeScenario: fakeScenario{prepared: map[string]int{}, closed: map[string]int{}}, sizes: []int{1, 10}, seed: c.Seed}
				if c.Profile == "quick" {
					s.sizes = []int{1, 2}
				}
				if c.FlagChanged("sizes") {
					var err error
					if s.sizes, err = scenario.Ints("sizes", *sizes); err != nil {
						return nil, err
					}
				}
				for _, n := range s.sizes {
					if n < 1 {
						return nil, fmt.Errorf("--sizes %d: must be at least 1", n)
					}
				}
				return s, nil
			}
		},
	})
}

func sizedBuilder(t *testing.T, args ...string) scenario.Builder {
	t.Helper()
	reg, err := scenario.Lookup("sized")
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.Parse(args...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The suite builds a registered scenario from its name and builder (its
// defaults without one); the builder's errors name its flags; an unknown
// name lists the registered ones.
func TestScenarioOptions(t *testing.T) {
	base := func() Options {
		o, err := Profile("quick")
		if err != nil {
			t.Fatal(err)
		}
		o.OutDir = t.TempDir()
		o.Backend = &fakeBackend{}
		return o
	}
	tests := []struct {
		name string
		edit func(*Options)
		want string // error substring, "" for none
	}{
		{"no scenario", func(*Options) {}, ""},
		{"defaults", func(o *Options) { o.Scenario = "sized" }, ""},
		{"flags", func(o *Options) { o.Scenario, o.NewScenario = "sized", sizedBuilder(t, "--sizes", "3,30") }, ""},
		{"unknown scenario", func(o *Options) { o.Scenario = "mesh" }, `--scenario "mesh": must be one of `},
		{"bad value", func(o *Options) { o.Scenario, o.NewScenario = "sized", sizedBuilder(t, "--sizes", "0") }, "--sizes 0: must be at least 1"},
		{"bad list", func(o *Options) { o.Scenario, o.NewScenario = "sized", sizedBuilder(t, "--sizes", "1,,2") }, `--sizes "1,,2": empty element`},
		{"builder without --scenario", func(o *Options) { o.NewScenario = sizedBuilder(t) }, "without --scenario"},
		{"builder of another scenario", func(o *Options) { o.Scenario, o.NewScenario = "other", sizedBuilder(t) }, "--scenario other: its options build another scenario"},
	}
	for _, tt := range tests {
		o := base()
		tt.edit(&o)
		err := o.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	o := base()
	o.Scenario, o.MTUs, o.Seed = "sized", []int{1500, 9000}, 42
	sc, err := o.newScenario()
	if err != nil {
		t.Fatal(err)
	}
	if s := sc.(*sized); !slices.Equal(s.sizes, []int{1, 2}) || s.seed != 42 {
		t.Errorf("built %+v: want the quick profile's sizes and the run's seed", s)
	}
	d := o.withScenarioDefaults(sc)
	if len(d.MTUs) != 1 || !slices.Equal(d.Tests, []string{"tcp_rr"}) || !slices.Equal(d.Flows, []int{1}) {
		t.Errorf("scenario defaults: %+v", d)
	}
	d.Duration = time.Second
	cfg := d.configMap(sc)
	if cfg["scenario"] != "sized" || cfg["sized_seed"] != "42" || cfg["sizes"] != "[1 2]" {
		t.Errorf("config: %v", cfg)
	}
	if _, ok := base().configMap(nil)["scenario"]; ok {
		t.Error("config has a scenario without --scenario")
	}
}

// A run of a scenario records its config and its report shape in the
// results document, with the scenario's seed the run's.
func TestRunRecordsScenarioShape(t *testing.T) {
	b := &fakeBackend{}
	o := fakeOptions(t, b)
	o.Scenario, o.NewScenario, o.Seed = "sized", sizedBuilder(t, "--sizes", "1,3"), 0
	out, err := (&Runner{}).Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	set, err := result.ReadFile(out.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	sh := set.Shape
	if sh == nil || sh.Scenario != "sized" || sh.Sweep == nil || sh.Sweep.X != "n" || sh.Categorical != nil {
		t.Fatalf("shape %+v", sh)
	}
	if set.Config["scenario"] != "sized" || set.Config["sizes"] != "[1 3]" || set.Config["sized_seed"] != set.Config["seed"] || set.Config["seed"] == "0" {
		t.Errorf("config %v", set.Config)
	}
	if len(set.Runs) != 2*2 {
		t.Errorf("%d runs, want 4 (2 sizes × 2 datapaths)", len(set.Runs))
	}
	// The matrix has no shape.
	m, err := (&Runner{}).Run(context.Background(), fakeOptions(t, &fakeBackend{}))
	if err != nil {
		t.Fatal(err)
	}
	if m.Set.Shape != nil {
		t.Errorf("matrix shape %+v", m.Set.Shape)
	}
}

// shaped is a scenario whose shape is what the test says.
type shaped struct {
	nameOnly
	sh result.ScenarioShape
}

func (s shaped) Shape() result.ScenarioShape { return s.sh }

func TestScenarioShape(t *testing.T) {
	sweep := &result.SweepShape{X: "n", Series: "kind"}
	tests := []struct {
		sc      scenario.Scenario
		want    string // the shape's scenario; "" for none
		warning string
	}{
		{nameOnly("plain"), "", ""},
		{shaped{"a", result.ScenarioShape{Sweep: sweep}}, "a", ""},
		{shaped{"a", result.ScenarioShape{Scenario: "a", Sweep: sweep}}, "a", ""},
		{shaped{"a", result.ScenarioShape{Scenario: "b", Sweep: sweep}}, "", `scenario a: its report shape is left out (it names scenario "b")`},
		{shaped{"a", result.ScenarioShape{}}, "", "scenario a: its report shape is left out (want exactly one of sweep and categorical)"},
	}
	for _, tt := range tests {
		sh, why := scenarioShape(tt.sc)
		got := ""
		if sh != nil {
			got = sh.Scenario
		}
		if got != tt.want || why != tt.warning {
			t.Errorf("%s: shape of %q, warning %q; want %q, %q", tt.sc.Name(), got, why, tt.want, tt.warning)
		}
	}
}
