package encrypt

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
)

// --encrypt is the scenario's flag and selects it by itself.
func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reg.Selects, []string{"encrypt"}) {
		t.Errorf("selects %v, want --encrypt", reg.Selects)
	}
	build, err := reg.Parse("--encrypt", "wireguard")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := build(scenario.Common{Profile: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	if pts := sc.(scenario.Configer).Config()["encryption_points"]; strings.Contains(pts, "ipsec") || !strings.Contains(pts, "wireguard") {
		t.Errorf("encryption_points %q", pts)
	}
	sh := sc.(scenario.Shaper).Shape()
	if sh.Valid() != "" || sh.Categorical.Series != LabelPodMTU || !slices.Contains(sh.Categorical.Metrics["tcp_stream"], "wire_marker_frames") {
		t.Errorf("shape %+v", sh)
	}
	build, _ = reg.Parse("--encrypt", "foo")
	if _, err := build(scenario.Common{}); err == nil || !strings.HasPrefix(err.Error(), `--encrypt "foo": must be among`) {
		t.Errorf("--encrypt foo: %v", err)
	}
}
