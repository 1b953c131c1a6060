package result

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// A registered metric is known, documented and listed with its owner,
// after the engine's; a name defined twice, or a definition without unit
// or help, panics.
func TestRegisterMetrics(t *testing.T) {
	RegisterMetrics("test-owner", map[string]MetricInfo{
		"test_registry_setup_seconds": {"s", Neutral, "a registered metric"},
		"test_registry_frames":        {"frames", LowerIsBetter, "another"},
	})
	if m, ok := Known("test_registry_setup_seconds"); !ok || m.Better != Neutral || m.Help != "a registered metric" {
		t.Errorf("Known: %+v, %v", m, ok)
	}
	// Info documents it as registered, not as its name would guess
	// (LowerIsBetter for _seconds).
	if m := Info("test_registry_setup_seconds"); m.Better != Neutral || m.Unit != "s" {
		t.Errorf("Info: %+v", m)
	}
	if m, ok := Known(ThroughputBitsPerSec); !ok || m != Metrics[ThroughputBitsPerSec] {
		t.Errorf("Known(engine's): %+v, %v", m, ok)
	}
	if _, ok := Known("test_registry_unknown"); ok {
		t.Error("an unknown metric is known")
	}
	defs := Definitions()
	if !slices.IsSortedFunc(defs, func(a, b Definition) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("definitions not sorted")
	}
	owners := map[string]string{}
	for _, d := range defs {
		owners[d.Name] = d.Owner
	}
	if len(defs) != len(Metrics)+2 || owners["test_registry_frames"] != "test-owner" || owners[TransPerSec] != "" {
		t.Errorf("%d definitions (%d engine's), owners %q %q", len(defs), len(Metrics), owners["test_registry_frames"], owners[TransPerSec])
	}
	for _, tc := range []struct {
		owner string
		defs  map[string]MetricInfo
		want  string
	}{
		{"other", map[string]MetricInfo{TransPerSec: {"trans/s", HigherIsBetter, "again"}}, "metric trans_per_sec is the engine's"},
		{"other", map[string]MetricInfo{"test_registry_frames": {"frames", Neutral, "again"}}, "metric test_registry_frames is already test-owner's"},
		{"test-owner", map[string]MetricInfo{"test_registry_frames": {"frames", Neutral, "again"}}, "already test-owner's"},
		{"other", map[string]MetricInfo{"test_registry_nounit": {"", Neutral, "no unit"}}, "has no unit or help"},
		{"other", map[string]MetricInfo{"test_registry_nohelp": {"s", Neutral, ""}}, "has no unit or help"},
		{"", map[string]MetricInfo{"test_registry_noowner": {"s", Neutral, "x"}}, "no owner"},
	} {
		if msg := panicOf(func() { RegisterMetrics(tc.owner, tc.defs) }); !strings.Contains(msg, tc.want) {
			t.Errorf("%s %v: panic %q, want %q", tc.owner, tc.defs, msg, tc.want)
		}
	}
	// A refused registration adds nothing.
	if _, ok := Known("test_registry_nohelp"); ok {
		t.Error("a refused metric was registered")
	}
}

// A legacy shape is kept for its scenario, handed out as a copy; an
// invalid one or a second one for the scenario panics.
func TestRegisterLegacyShape(t *testing.T) {
	sh := ScenarioShape{
		Scenario: "test-registry-lb",
		Categorical: &CategoricalShape{Groups: []string{"lb_mode"}, GroupHeaders: []string{"LB mode"}, Series: "firewall",
			Metrics: map[string][]string{"tcp_rr": {TransPerSec}}},
		MetricTitles: map[string]string{"lb_node_cpu_pct": "LB node CPU"},
	}
	RegisterLegacyShape(sh)
	sh.Categorical.Groups[0] = "changed" // the caller's copy
	got, ok := LegacyShape("test-registry-lb")
	if !ok || got.Categorical.Groups[0] != "lb_mode" {
		t.Fatalf("LegacyShape: %+v, %v", got, ok)
	}
	got.Categorical.Metrics["tcp_rr"][0] = "changed"
	got.MetricTitles["x"] = "y"
	if again, _ := LegacyShape("test-registry-lb"); again.Categorical.Metrics["tcp_rr"][0] != TransPerSec || len(again.MetricTitles) != 1 {
		t.Errorf("a handed-out shape changed the registered one: %+v", again)
	}
	if !reflect.DeepEqual(got.clone(), got) {
		t.Error("clone differs")
	}
	if _, ok := LegacyShape("test-registry-none"); ok {
		t.Error("a shape for a scenario that registered none")
	}
	for _, tc := range []struct {
		sh   ScenarioShape
		want string
	}{
		{ScenarioShape{Scenario: "test-registry-lb", Sweep: &SweepShape{X: "n", Series: "s"}}, `scenario "test-registry-lb" registered twice`},
		{ScenarioShape{Scenario: "test-registry-bad"}, "want exactly one of sweep and categorical"},
	} {
		if msg := panicOf(func() { RegisterLegacyShape(tc.sh) }); !strings.Contains(msg, tc.want) {
			t.Errorf("%+v: panic %q, want %q", tc.sh, msg, tc.want)
		}
	}
}
