package l4lb

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
)

func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args  []string
		modes string
		err   string
	}{
		{[]string{"--lb-modes", "snat-vxlan,dsr-direct-fw"}, "snat-vxlan,dsr-direct-fw", ""},
		{[]string{"--lb-modes", "bogus"}, "", `--lb-modes "bogus": l4lb mode "bogus"`},
		{[]string{"--lb-modes", "snat-vxlan,"}, "", `--lb-modes "snat-vxlan,": empty element`},
		{[]string{"--lb-modes", "kubeproxy-vxlan", "--lb-cpu", "shared,split", "--syn-flood", "100000"}, "kubeproxy-vxlan", ""},
		{[]string{"--lb-cpu", "half"}, "", `--lb-cpu "half": want shared or split`},
		{[]string{"--syn-flood", "-5"}, "", `--syn-flood -5: want 0 (off)`},
	} {
		build, err := reg.Parse(tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := build(scenario.Common{Profile: "quick"})
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.(scenario.Configer).Config()["lb_modes"]; got != tt.modes {
			t.Errorf("%v: lb_modes %q", tt.args, got)
		}
		sh := sc.(scenario.Shaper).Shape()
		if sh.Valid() != "" || sh.Categorical.Groups[0] != LabelLBMode || sh.Categorical.Series != LabelFirewall || len(sh.Categorical.Metrics["http"]) != 7 {
			t.Errorf("shape %+v", sh)
		}
	}
}
