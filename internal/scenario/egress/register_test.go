package egress

import (
	"maps"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

// The scenario registers itself: its flags, the quick profile's rule
// counts, the run's seed, its config and its report shape.
func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		profile string
		want    map[string]string // config subset
		err     string
	}{
		{nil, "quick", map[string]string{"rules": "10,1000", "filter_traversal": "every-packet", "filter_seed": "42", "mechanisms": strings.Join(filter.Mechanisms(), ",")}, ""},
		{nil, "standard", map[string]string{"rules": "10,100,1000,10000,100000,1000000"}, ""},
		{[]string{"--rules", "5,50", "--mechanisms", "none"}, "quick", map[string]string{"rules": "5,50", "mechanisms": "none"}, ""},
		{[]string{"--filter-traversal", "new-connection,every-packet"}, "quick", map[string]string{"filter_traversal": "new-connection,every-packet"}, ""},
		{[]string{"--rules", "10,,100"}, "quick", nil, `--rules "10,,100": empty element`},
		{[]string{"--mechanisms", "pf"}, "quick", nil, `--mechanisms: unknown egress mechanism "pf"`},
		{[]string{"--filter-traversal", "x"}, "quick", nil, `--filter-traversal "x": must be one of`},
	}
	for _, tt := range tests {
		build, err := reg.Parse(tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := build(scenario.Common{Profile: tt.profile, Seed: 42})
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		cfg := sc.(scenario.Configer).Config()
		got := map[string]string{}
		for k := range tt.want {
			got[k] = cfg[k]
		}
		if !maps.Equal(got, tt.want) || !strings.Contains(cfg["scenario_cells"], "--rate 1G") {
			t.Errorf("%v: config %v, want %v", tt.args, cfg, tt.want)
		}
		sh := sc.(scenario.Shaper).Shape()
		if sh.Valid() != "" || sh.Scenario != ScenarioName || sh.Sweep.X != LabelRules || sh.Sweep.Series != LabelMechanism {
			t.Errorf("shape %+v", sh)
		}
	}
}
