package report

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func TestInterferenceNote(t *testing.T) {
	tests := []struct {
		name string
		in   *result.Interference
		want []string
	}{
		{"old document", nil, nil},
		{"quiet", &result.Interference{ThresholdPct: 25, IdleSeconds: 2, IdleForeignPct: 1, MedianPct: 2, MaxPct: 6, Repeats: 120, Cells: 10},
			[]string{"The host was quiet", "median 2 % of a core", "1 % before the run", "no repeat passed the 25 % threshold"}},
		{"busy, some not trusted", &result.Interference{ThresholdPct: 25, IdleSeconds: 2, IdleForeignPct: 97, MedianPct: 95, MaxPct: 101, Repeats: 200, Busy: 150, Reruns: 80, Cells: 10, Touched: 10, NotTrusted: 7},
			[]string{"The host was busy: ", "median 95 % of a core", "150 of 200 repeats passed the 25 % threshold, in 10 of 10 cells", "80 repeats were measured again", "7 cells are not trusted"}},
		// most windows quiet, one repeat past the threshold: busy at times
		{"busy at times", &result.Interference{ThresholdPct: 25, IdleSeconds: 2, IdleForeignPct: 13, MedianPct: 0, MaxPct: 39, Repeats: 121, Busy: 1, Reruns: 1, Cells: 24, Touched: 1},
			[]string{"The host was busy at times: ", "1 of 121 repeats passed the 25 % threshold, in 1 of 24 cells", "every cell kept enough clean repeats"}},
		{"rule off", &result.Interference{MedianPct: 40, Repeats: 10}, []string{"not marked (--busy-threshold 0)"}},
	}
	for _, tt := range tests {
		got := InterferenceNote(&result.Set{Interference: tt.in})
		if tt.want == nil && got != "" {
			t.Errorf("%s: %q, want none", tt.name, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
	}
}

// A cell not trusted is graded "not trusted", whatever its ratio, and so
// is every cell compared with a baseline not trusted.
func TestGradeNotTrusted(t *testing.T) {
	run := func(dp string, v float64, why string) result.Run {
		r := result.Run{Labels: map[string]string{LabelDatapath: dp, LabelPath: "cross-node", LabelTest: "tcp_rr", "flows": "1", "mtu": "1500"}, NotTrusted: why}
		if dp == BaselineDatapath {
			r.Labels[LabelPath] = "node-to-node"
		}
		for i := 0; i < 6; i++ {
			r.Repeats = append(r.Repeats, result.Repeat{Metrics: map[string]float64{result.TransPerSec: v + float64(i)}})
		}
		r.Summary = result.SummarizeRepeats(r.Repeats)
		return r
	}
	set := &result.Set{Runs: []result.Run{run(BaselineDatapath, 100, ""), run("a", 90, "not trusted: the host was busy (median 80 % of a core used by other programs)"), run("b", 95, "")}}
	got := map[string]GradedCell{}
	for _, c := range SummaryGrades(set) {
		got[c.Datapath] = c
	}
	if c := got["a"]; c.NotTrusted == "" || c.Text() != "not trusted" {
		t.Errorf("a: %+v, text %q", c, c.Text())
	}
	if c := got["b"]; c.NotTrusted != "" || c.Grade != VeryGood {
		t.Errorf("b: %+v", c)
	}
	set.Runs[0].NotTrusted = "not trusted: the host was busy (median 50 % of a core used by other programs)"
	for _, c := range SummaryGrades(set) {
		if c.Text() != "not trusted" {
			t.Errorf("%s graded %q against a baseline not trusted", c.Datapath, c.Text())
		}
	}
}
