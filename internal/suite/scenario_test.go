package suite

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress"
	"github.com/cnibench/cnibench/pkg/result"
)

func TestScenarioCellLabels(t *testing.T) {
	p := scenario.Point{Labels: egress.PointLabels("ipset", 1000, egress.TraversalNewConnection)}
	sc, err := egress.NewScenario(egress.ScenarioOptions{Mechanisms: []string{"none"}})
	if err != nil {
		t.Fatal(err)
	}
	cells := scenarioCells(sc, p, "veth-routing", &depRun{mtu: 1500})
	if len(cells) != len(defaultCells) {
		t.Fatalf("%d cells, want %d", len(cells), len(defaultCells))
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
			want[LabelRate] = c.sc.rate
			if c.Test != engine.UDPStream || c.sc.rate != FixedRate {
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
		sc := &scenarioCell{metrics: map[string]float64{result.FilterSetupSeconds: 0.25}, config: map[string]string{"filter_seed": "7"}}
		res := result.Result{Repeats: []result.Repeat{tt.repeat}}
		sc.apply(cell{Test: tt.test}, &res)
		m := res.Repeats[0].Metrics
		if m[result.FilterSetupSeconds] != 0.25 || res.Config["filter_seed"] != "7" {
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
		{"egress", func(o *Options) { o.Scenario = ScenarioEgress; o.Mechanisms = []string{"none"}; o.Rules = []int{10} }, ""},
		{"unknown scenario", func(o *Options) { o.Scenario = "mesh" }, `--scenario "mesh"`},
		{"rules without scenario", func(o *Options) { o.Rules = []int{10} }, "need --scenario egress-filter"},
		{"bad mechanism", func(o *Options) { o.Scenario = ScenarioEgress; o.Mechanisms = []string{"pf"} }, "--mechanisms"},
		{"bad traversal", func(o *Options) { o.Scenario = ScenarioEgress; o.FilterTraversals = []string{"x"} }, "--filter-traversal"},
		{"services", func(o *Options) { o.Scenario = ScenarioServices; o.Services = []int{1, 1000} }, ""},
		{"services without scenario", func(o *Options) { o.Services = []int{1} }, "need --scenario services"},
		{"rules with services", func(o *Options) { o.Scenario = ScenarioServices; o.Rules = []int{10} }, "options of --scenario egress-filter, not services"},
		{"services with egress", func(o *Options) { o.Scenario = ScenarioEgress; o.Implementations = []string{"iptables"} }, "options of --scenario services, not egress-filter"},
		{"bad implementation", func(o *Options) { o.Scenario = ScenarioServices; o.Implementations = []string{"ipvs"} }, "--implementations"},
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
	o.Scenario, o.MTUs, o.Seed = ScenarioEgress, []int{1500, 9000}, 42
	sc, err := o.newScenario()
	if err != nil {
		t.Fatal(err)
	}
	d := o.withScenarioDefaults(sc)
	if len(d.MTUs) != 1 || !slices.Contains(d.Tests, "icmp_echo") || !slices.Equal(d.Flows, []int{1}) {
		t.Errorf("scenario defaults: %+v", d)
	}
	d.Duration = time.Second
	cfg := d.configMap()
	if cfg["scenario"] != ScenarioEgress || cfg["filter_seed"] != "42" || cfg["rules"] == "" || cfg["mechanisms"] == "" {
		t.Errorf("config: %v", cfg)
	}
	if _, ok := base().configMap()["scenario"]; ok {
		t.Error("config has a scenario without --scenario")
	}
}
