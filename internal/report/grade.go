package report

import (
	"fmt"
	"math"

	"github.com/cnibench/cnibench/pkg/result"
)

// Grade is the verdict of the summary table (seed 002's scale).
type Grade int

// Grades, best first. NoGrade marks a cell without data.
const (
	VeryGood Grade = iota
	Good
	Fair
	Poor
	NoGrade
)

// Grade thresholds: the share of the node-to-node baseline's primary
// metric a datapath reaches (direction-aware, so for lower-is-better
// metrics the ratio is baseline ÷ datapath).
const (
	VeryGoodRatio = 0.90
	GoodRatio     = 0.75
	FairRatio     = 0.50
)

func (g Grade) String() string {
	switch g {
	case VeryGood:
		return "Very good"
	case Good:
		return "Good"
	case Fair:
		return "Fair"
	case Poor:
		return "Poor"
	}
	return "—"
}

// class is the CSS class of the grade.
func (g Grade) class() string {
	switch g {
	case VeryGood:
		return "g-verygood"
	case Good:
		return "g-good"
	case Fair:
		return "g-fair"
	case Poor:
		return "g-poor"
	}
	return "g-none"
}

// GradeOf maps a ratio to baseline to a grade.
func GradeOf(ratio float64) Grade {
	switch {
	case math.IsNaN(ratio) || math.IsInf(ratio, 0) || ratio <= 0:
		return NoGrade
	case ratio >= VeryGoodRatio:
		return VeryGood
	case ratio >= GoodRatio:
		return Good
	case ratio >= FairRatio:
		return Fair
	}
	return Poor
}

// GradeExplanation documents the grading in the report itself.
func GradeExplanation() string {
	return fmt.Sprintf("Each cell compares the datapath's median of the test's primary metric (throughput for stream tests, "+
		"transactions per second for rr, crr and http) with the node-to-node baseline's median for the same test, flow count and MTU "+
		"(the baseline has no container network, so its path is node-to-node; the other labels must match). "+
		"The ratio is datapath ÷ baseline (baseline ÷ datapath for metrics where lower is better); with several flow counts "+
		"it is their geometric mean. Very good: ≥ %.0f %% of the baseline; Good: ≥ %.0f %%; Fair: ≥ %.0f %%; Poor: below %.0f %%. "+
		"Same-node traffic never leaves the host and can beat the baseline (more than 100 %%).",
		100*VeryGoodRatio, 100*GoodRatio, 100*FairRatio, 100*FairRatio)
}

// gradeCell is one datapath × test verdict.
type gradeCell struct {
	Grade Grade
	Ratio float64 // NaN without data
	Flows int     // flow counts that entered the ratio
}

func (c gradeCell) text() string {
	if c.Grade == NoGrade {
		return "—"
	}
	return fmt.Sprintf("%s (%.0f %%)", c.Grade, 100*c.Ratio)
}

type gradeTable struct {
	Path  string
	Tests []string
	Rows  []gradeRow
}

type gradeRow struct {
	Datapath string
	Cells    []gradeCell
}

// grades builds one table per container path (cross-node, same-node).
func (m *model) grades() []gradeTable {
	if !m.measured(BaselineDatapath) {
		return nil
	}
	var out []gradeTable
	var paths []string
	for _, p := range values(m.main, LabelPath) {
		if p != "node-to-node" {
			paths = append(paths, p)
		}
	}
	for _, path := range paths {
		gt := gradeTable{Path: path, Tests: m.tests}
		for _, dp := range m.datapaths {
			if dp == BaselineDatapath || !m.measured(dp) {
				continue
			}
			row := gradeRow{Datapath: dp}
			any := false
			for _, test := range m.tests {
				c := m.grade(dp, path, test)
				if c.Grade != NoGrade {
					any = true
				}
				row.Cells = append(row.Cells, c)
			}
			if any {
				gt.Rows = append(gt.Rows, row)
			}
		}
		if len(gt.Rows) > 0 {
			out = append(out, gt)
		}
	}
	return out
}

func (m *model) grade(dp, path, test string) gradeCell {
	metric := PrimaryMetric(test)
	better := result.Info(metric).Better
	logSum, n := 0.0, 0
	for _, r := range filter(m.main, map[string]string{LabelDatapath: dp, LabelPath: path, LabelTest: test}) {
		b := baselineRun(m.main, r.Labels)
		if b == nil {
			continue
		}
		sd, ok1 := Summary(r, metric)
		sb, ok2 := Summary(b, metric)
		if !ok1 || !ok2 || sd.Median <= 0 || sb.Median <= 0 {
			continue
		}
		ratio := sd.Median / sb.Median
		if better == result.LowerIsBetter {
			ratio = sb.Median / sd.Median
		}
		logSum += math.Log(ratio)
		n++
	}
	if n == 0 {
		return gradeCell{Grade: NoGrade, Ratio: math.NaN()}
	}
	ratio := math.Exp(logSum / float64(n))
	return gradeCell{Grade: GradeOf(ratio), Ratio: ratio, Flows: n}
}
