package result

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestShapeValid(t *testing.T) {
	sweep := &SweepShape{X: "rules", Series: "mechanism"}
	cat := &CategoricalShape{Groups: []string{"a", "b"}, GroupHeaders: []string{"A", "B"}, Series: "c"}
	for _, tt := range []struct {
		sh   ScenarioShape
		want string
	}{
		{ScenarioShape{Scenario: "s", Sweep: sweep}, ""},
		{ScenarioShape{Scenario: "s", Categorical: cat}, ""},
		{ScenarioShape{Sweep: sweep}, "no scenario"},
		{ScenarioShape{Scenario: "s"}, "want exactly one of sweep and categorical"},
		{ScenarioShape{Scenario: "s", Sweep: sweep, Categorical: cat}, "want exactly one of sweep and categorical"},
		{ScenarioShape{Scenario: "s", Sweep: &SweepShape{X: "rules"}}, "sweep: x and series are required"},
		{ScenarioShape{Scenario: "s", Categorical: &CategoricalShape{Groups: []string{"a"}, Series: "c"}}, "categorical: groups, as many group headers, and series are required"},
	} {
		if got := tt.sh.Valid(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.sh, got, tt.want)
		}
	}
}

// The shape travels in the results document; a set without one writes no
// "shape" key, so documents of the matrix are unchanged.
func TestShapeRoundTrip(t *testing.T) {
	set := &Set{Schema: SchemaResults, Shape: &ScenarioShape{
		Scenario: "l4lb",
		Categorical: &CategoricalShape{Groups: []string{"lb_mode"}, GroupHeaders: []string{"LB mode"}, Series: "firewall", SeriesHeader: "Firewall",
			Intro: "x", Metrics: MetricsPerTest(func(test string) []string {
				if IsStream(test) {
					return []string{ThroughputBitsPerSec}
				}
				return nil
			})},
		MetricTitles: map[string]string{"lb_node_cpu_pct": "LB node CPU"},
	}}
	var buf bytes.Buffer
	if err := Write(&buf, set); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"shape"`, `"categorical"`, `"group_headers"`, `"metric_titles"`, `"tcp_stream"`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("document lacks %s:\n%s", key, buf.String())
		}
	}
	if strings.Contains(buf.String(), `"tcp_rr"`) || strings.Contains(buf.String(), `"sweep"`) {
		t.Errorf("empty entries written:\n%s", buf.String())
	}
	got, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Shape, set.Shape) {
		t.Errorf("round trip: %+v, want %+v", got.Shape, set.Shape)
	}
	buf.Reset()
	if err := Write(&buf, &Set{Schema: SchemaResults}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "shape") {
		t.Errorf("a set without a shape writes one: %s", buf.String())
	}
}
