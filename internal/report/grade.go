package report

import (
	"fmt"
	"math"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
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
		"A cell names two grades (\"Good–Very good\") when the ratio's 95 %% confidence interval crosses a threshold: "+
		"the data cannot tell the two apart, and repeated runs may land on either side. "+
		"Same-node traffic never leaves the host and can beat the baseline (more than 100 %%).",
		100*VeryGoodRatio, 100*GoodRatio, 100*FairRatio, 100*FairRatio)
}

// gradeCell is one datapath × test verdict.
type gradeCell struct {
	Grade Grade
	Ratio float64 // NaN without data
	// Lo and Hi bound the ratio's 95 % interval (see ratioInterval); when
	// they fall in different grades the cell shows the span of grades.
	Lo, Hi float64
	Flows  int // flow counts that entered the ratio
	// NotTrusted is why the cell is not graded: it or its baseline had
	// too few clean repeats (result.Run.NotTrusted).
	NotTrusted string
}

// span is the best and worst grade the ratio's interval reaches.
func (c gradeCell) span() (best, worst Grade) {
	best, worst = c.Grade, c.Grade
	if c.Grade == NoGrade || math.IsNaN(c.Lo) || math.IsNaN(c.Hi) {
		return best, worst
	}
	if g := GradeOf(c.Hi); g != NoGrade && g < best {
		best = g
	}
	if g := GradeOf(c.Lo); g != NoGrade && g > worst {
		worst = g
	}
	return best, worst
}

// text is "Very good (94 %)", or "Good–Very good (88 %)" when the
// interval spans two grades (the worse grade first).
func (c gradeCell) text() string {
	if c.NotTrusted != "" {
		return "not trusted"
	}
	if c.Grade == NoGrade {
		return "—"
	}
	best, worst := c.span()
	name := c.Grade.String()
	if best != worst {
		name = worst.String() + "–" + best.String()
	}
	return fmt.Sprintf("%s (%.0f %%)", name, 100*c.Ratio)
}

// class colours the cell by its median's grade, or by the boundary class
// when the interval spans grades.
func (c gradeCell) class() string {
	best, worst := c.span()
	if best != worst {
		return worst.class() + "-" + best.class()[2:]
	}
	return c.Grade.class()
}

// logHalfWidth is the half-width of a summary's 95 % interval on a log
// scale: the larger of ln(high/median) and ln(median/low); NaN when the
// interval is unusable.
func logHalfWidth(s stats.Summary) float64 {
	if s.Median <= 0 || s.CI95Low <= 0 || s.CI95High <= 0 {
		return math.NaN()
	}
	return math.Max(math.Log(s.CI95High/s.Median), math.Log(s.Median/s.CI95Low))
}

// ratioLog is ln(d's median ÷ b's median) of metric and the half-width,
// on the same log scale, of the ratio's 95 % interval: the interval of
// the two-sample Hodges–Lehmann estimate of the ratio (the Mann–Whitney U
// test inverted over the two cells' repeats, stats.ChangeInterval, as the
// regression gate computes it), made symmetric about the ratio of the
// medians and so never narrower than it. When the repeats are too few for
// that interval (3 against 3 has none at 95 %) or hold values a ratio cannot
// use, the two medians' own interval half-widths are added in quadrature
// instead — a wider bound. ok is false when a median is missing or not
// positive.
func ratioLog(d, b *result.Run, metric string) (lr, hw float64, ok bool) {
	sd, ok1 := Summary(d, metric)
	sb, ok2 := Summary(b, metric)
	if !ok1 || !ok2 || sd.Median <= 0 || sb.Median <= 0 {
		return math.NaN(), math.NaN(), false
	}
	lr = math.Log(sd.Median / sb.Median)
	if c, err := stats.ChangeInterval(Values(b, metric), Values(d, metric), stats.Confidence); err == nil && c.Lo > 0 && c.Hi > 0 {
		return lr, math.Max(lr-math.Log(c.Lo), math.Log(c.Hi)-lr), true
	}
	hd, hb := logHalfWidth(sd), logHalfWidth(sb)
	return lr, math.Sqrt(hd*hd + hb*hb), true
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
				if c.Grade != NoGrade || c.NotTrusted != "" {
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
	logSum, varSum, n := 0.0, 0.0, 0
	for _, r := range filter(m.main, map[string]string{LabelDatapath: dp, LabelPath: path, LabelTest: test}) {
		b := baselineRun(m.main, r.Labels)
		if b == nil {
			continue
		}
		if why := firstNonEmpty(r.NotTrusted, b.NotTrusted); why != "" {
			return gradeCell{Grade: NoGrade, Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), NotTrusted: why}
		}
		lr, hw, ok := ratioLog(r, b, metric)
		if !ok {
			continue
		}
		if better == result.LowerIsBetter {
			lr = -lr
		}
		logSum += lr
		varSum += hw * hw
		n++
	}
	if n == 0 {
		return gradeCell{Grade: NoGrade, Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	mean := logSum / float64(n)
	// The geometric mean over flow counts: the mean of n independent log
	// ratios has half-width sqrt(Σ h²) / n.
	hw := math.Sqrt(varSum) / float64(n)
	ratio := math.Exp(mean)
	return gradeCell{Grade: GradeOf(ratio), Ratio: ratio, Lo: math.Exp(mean - hw), Hi: math.Exp(mean + hw), Flows: n}
}

// GradedCell is one cell of the graded summary as the report computes it:
// the ratio to the baseline, its 95 % interval and the grades that
// interval reaches (Worst == Best: one grade).
type GradedCell struct {
	Path, Datapath, Test string
	Grade, Worst, Best   Grade
	Ratio, Lo, Hi        float64
	// NotTrusted is why a cell is not graded (Grade is then NoGrade): it
	// or its baseline had too few clean repeats.
	NotTrusted string
}

// HalfWidth is the interval's half-width relative to the ratio (0.06 for
// ±6 %), the larger side.
func (c GradedCell) HalfWidth() float64 {
	return math.Max(c.Hi/c.Ratio-1, 1-c.Lo/c.Ratio)
}

// Text is the cell as the summary prints it ("Good–Very good (88 %)").
func (c GradedCell) Text() string {
	return gradeCell{Grade: c.Grade, Ratio: c.Ratio, Lo: c.Lo, Hi: c.Hi, NotTrusted: c.NotTrusted}.text()
}

// SummaryGrades returns every graded cell of the set's summary (none
// without a baseline), in the report's order; a cell not trusted is among
// them with its reason.
func SummaryGrades(set *result.Set) []GradedCell {
	m := newModel(set)
	var out []GradedCell
	for _, gt := range m.grades() {
		for _, row := range gt.Rows {
			for i, c := range row.Cells {
				if c.Grade == NoGrade && c.NotTrusted == "" {
					continue
				}
				best, worst := c.span()
				out = append(out, GradedCell{Path: gt.Path, Datapath: row.Datapath, Test: gt.Tests[i],
					Grade: c.Grade, Worst: worst, Best: best, Ratio: c.Ratio, Lo: c.Lo, Hi: c.Hi, NotTrusted: c.NotTrusted})
			}
		}
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
