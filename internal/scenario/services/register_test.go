package services

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
)

// The scenario registers itself: its flags, the quick profile's service
// counts, its config and its report shape.
func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args            []string
		profile         string
		services, impls string
		err             string
	}{
		{nil, "quick", "1,1000", strings.Join(Implementations, ","), ""},
		{nil, "standard", "1,100,1000,10000", strings.Join(Implementations, ","), ""},
		{[]string{"--services", "7", "--implementations", "iptables"}, "quick", "7", "iptables", ""},
		{[]string{"--services", "x"}, "quick", "", "", `--services x: "x" is not a whole number`},
		{[]string{"--implementations", "ipvs"}, "quick", "", "", `--implementations "ipvs": must be among`},
	}
	for _, tt := range tests {
		build, err := reg.Parse(tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := build(scenario.Common{Profile: tt.profile})
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
		if cfg["services"] != tt.services || cfg["implementations"] != tt.impls {
			t.Errorf("%v: config %v", tt.args, cfg)
		}
		if sh := sc.(scenario.Shaper).Shape(); sh.Valid() != "" || sh.Sweep.X != LabelServices || sh.Sweep.Baseline != ImplNone {
			t.Errorf("shape %+v", sh)
		}
	}
}
