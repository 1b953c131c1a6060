package mtu

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
)

func TestPoints(t *testing.T) {
	tests := []struct {
		name     string
		settings []string
		want     []string // pod_mtu/icmp_frag_needed
		err      string
	}{
		{"default", nil, []string{"correct/pass", "1500/pass", "1450/pass", "too-large/pass", "too-large/drop"}, ""},
		{"order is the scenario's", []string{"too-large", "correct"}, []string{"correct/pass", "too-large/pass", "too-large/drop"}, ""},
		{"one", []string{"1450"}, []string{"1450/pass"}, ""},
		{"unknown", []string{"9000"}, nil, `--pod-mtus "9000": must be among correct, 1500, 1450, too-large`},
		{"twice", []string{"1500", "1500"}, nil, "--pod-mtus: 1500 given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Options{Settings: tt.settings})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range s.Points() {
				if p.Skip != nil {
					t.Errorf("%v skipped: %v", p.Labels, p.Skip)
				}
				if p.Labels[scenario.LabelScenario] != ScenarioName || len(p.Labels) != 3 {
					t.Errorf("labels %v", p.Labels)
				}
				if rt := pointOf(p).labels(); !mapsEqual(rt, p.Labels) {
					t.Errorf("labels %v do not round-trip: %v", p.Labels, rt)
				}
				got = append(got, p.Labels[LabelPodMTU]+"/"+p.Labels[LabelICMP])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("points %v, want %v", got, tt.want)
			}
			if cfg := s.Config()["mtu_points"]; cfg != strings.Join(tt.want, ",") {
				t.Errorf("config mtu_points %q", cfg)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCells(t *testing.T) {
	s, _ := New(Options{})
	var got []string
	for _, c := range s.Cells(s.Points()[0]) {
		if c.Flows != 1 || c.Rate != "" || c.Path != "" {
			t.Errorf("cell %+v: want one flow, no rate, the cross-node path", c)
		}
		got = append(got, c.Test)
	}
	if want := []string{engine.TCPStream, engine.TCPRR, engine.TCPCRR}; !slices.Equal(got, want) {
		t.Errorf("cells %v, want %v", got, want)
	}
}

func TestPodMTUFor(t *testing.T) {
	tests := []struct {
		setting string
		correct int
		want    int
		err     bool
	}{
		{MTUCorrect, 8950, 8950, false}, // vxlan on a 9000 wire
		{MTUCorrect, 9000, 9000, false}, // veth-routing
		{MTU1500, 8950, 1500, false},
		{MTU1450, 9000, 1450, false},
		{MTUTooLarge, 8950, 9000, false}, // vxlan: the wire's MTU, encapsulation not subtracted
		{MTUTooLarge, 9000, 9050, false},
		{"jumbo", 9000, 0, true},
	}
	for _, tt := range tests {
		got, err := podMTUFor(tt.setting, tt.correct)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("podMTUFor(%s, %d) = %d, %v; want %d (error %v)", tt.setting, tt.correct, got, err, tt.want, tt.err)
		}
	}
}

func TestDetectedMetrics(t *testing.T) {
	tests := []struct {
		name    string
		cfg     map[string]string
		correct int
		want    map[string]float64
	}{
		{"right", map[string]string{"path_mtu": "8950"}, 8950, map[string]float64{MetricDetected: 8950, MetricDetectedOff: 0}},
		{"under-used", map[string]string{"path_mtu": "1450"}, 8950, map[string]float64{MetricDetected: 1450, MetricDetectedOff: -7500}},
		{"too large", map[string]string{"path_mtu": "9000"}, 8950, map[string]float64{MetricDetected: 9000, MetricDetectedOff: 50}},
		{"not measured", map[string]string{}, 8950, nil},
		{"garbage", map[string]string{"path_mtu": "x"}, 8950, nil},
		{"zero", map[string]string{"path_mtu": "0"}, 8950, nil},
	}
	for _, tt := range tests {
		got := detectedMetrics(tt.cfg, tt.correct)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tt.name, k, got[k], v)
			}
		}
	}
}

// The registration: --pod-mtus parsed into the settings, bad values
// refused naming the flag, and a report shape that is valid.
func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		n    int
		err  string
	}{
		{nil, 5, ""},
		{[]string{"--pod-mtus", "correct,too-large"}, 3, ""},
		{[]string{"--pod-mtus", "correct,,1500"}, 0, "--pod-mtus \"correct,,1500\": empty element"},
		{[]string{"--pod-mtus", "big"}, 0, "--pod-mtus \"big\""},
	}
	for _, tt := range tests {
		build, err := reg.Parse(tt.args...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		sc, err := build(scenario.Common{Backend: "lab"})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if n := len(sc.Points()); n != tt.n {
			t.Errorf("%v: %d points, want %d", tt.args, n, tt.n)
		}
		sh := sc.(scenario.Shaper).Shape()
		if bad := sh.Valid(); bad != "" || sh.Scenario != ScenarioName {
			t.Errorf("shape: %q (%s)", bad, sh.Scenario)
		}
		if _, ok := sc.(scenario.AnyDatapath); !ok {
			t.Error("not AnyDatapath: vxlan would be refused")
		}
	}
}
