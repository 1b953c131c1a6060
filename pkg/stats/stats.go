// Package stats summarises repeated measurements: median, range, a 95 %
// confidence interval for the median (order statistics, from
// golang.org/x/perf/benchmath), the coefficient of variation, and warnings
// about samples too small or too noisy to trust. It never fails: problems
// are reported as Warnings, in the manner of benchstat. It is public because
// the result documents (pkg/result) embed its Summary; it imports nothing
// internal.
package stats

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat"
)

// Confidence is the confidence level of the intervals cnibench reports.
const Confidence = 0.95

// Documented noise thresholds (docs/results.md).
const (
	// MinRepeats is the number of repeats below which a summary warns.
	MinRepeats = 5
	// MaxCoV is the coefficient of variation (stddev/mean) above which a
	// summary warns that the sample is noisy.
	MaxCoV = 0.10
	// OutlierFactor: a repeat further than OutlierFactor × MAD from the
	// median, and further than OutlierMinDeviation of the median, is
	// reported as an outlier.
	OutlierFactor = 5.0
	// OutlierMinDeviation keeps the MAD rule from flagging repeats of a
	// very quiet sample that are only slightly off (with 5 repeats the MAD
	// can be tiny): an outlier is also at least 5 % away from the median.
	OutlierMinDeviation = 0.05
)

// Summary describes one metric over n repeats. Field names follow the
// cnibench/result/v1 JSON schema.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	// CI95Low and CI95High bound the median. With too few repeats for a
	// 95 % interval they are the sample's range and Confidence says how
	// confident that range is.
	CI95Low    float64 `json:"ci95_low"`
	CI95High   float64 `json:"ci95_high"`
	Confidence float64 `json:"confidence"`
	// CoV is the coefficient of variation, stddev/mean (0 when n < 2).
	CoV      float64  `json:"cov"`
	Warnings []string `json:"warnings,omitempty"`
}

// Summarize computes a Summary of values. NaN values are ignored; an empty
// sample gives N == 0 and a warning.
func Summarize(values []float64) Summary {
	xs := Clean(values)
	if len(xs) == 0 {
		return Summary{Warnings: []string{"no measurements"}}
	}
	sort.Float64s(xs)
	s := Summary{N: len(xs), Min: xs[0], Max: xs[len(xs)-1]}
	sample := benchmath.NewSample(xs, &benchmath.DefaultThresholds)
	bs := benchmath.AssumeNothing.Summary(sample, Confidence)
	s.Median = bs.Center
	s.Mean = stat.Mean(xs, nil)
	if math.IsInf(bs.Lo, 0) || math.IsInf(bs.Hi, 0) {
		// Too few repeats for a distribution-free 95 % interval of the
		// median: the range [min, max] is the widest order-statistic
		// interval, with confidence 1 - 2·0.5^n.
		s.CI95Low, s.CI95High = s.Min, s.Max
		s.Confidence = 1 - 2*math.Pow(0.5, float64(s.N))
		if s.N == 1 {
			s.Confidence = 0
		}
	} else {
		s.CI95Low, s.CI95High, s.Confidence = bs.Lo, bs.Hi, bs.Confidence
	}
	if s.N >= 2 && s.Mean != 0 {
		s.CoV = stat.StdDev(xs, nil) / math.Abs(s.Mean)
	}
	if s.N < MinRepeats {
		s.Warnings = append(s.Warnings, fmt.Sprintf("only %d repeat(s): at least %d are needed for a trustworthy median", s.N, MinRepeats))
	}
	if s.N < 6 && s.N > 1 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("n=%d %s (%.1f%% confidence)", s.N, rangeNote, 100*s.Confidence))
	}
	if s.CoV > MaxCoV {
		s.Warnings = append(s.Warnings, fmt.Sprintf("noisy: coefficient of variation %.1f%% is above %.0f%%", 100*s.CoV, 100*MaxCoV))
	}
	if out := Outliers(xs); len(out) > 0 {
		vs := make([]string, len(out))
		for i, v := range out {
			if s.Median != 0 {
				vs[i] = fmt.Sprintf("%+.1f%%", 100*(v/s.Median-1))
			} else {
				vs[i] = strconv.FormatFloat(v, 'g', 4, 64)
			}
		}
		what := "off the median by"
		if s.Median == 0 {
			what = "with values"
		}
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d repeat(s) far outside the rest (more than %.0f×MAD and %.0f%% from the median), %s %s",
			len(out), OutlierFactor, 100*OutlierMinDeviation, what, strings.Join(vs, ", ")))
	}
	return s
}

const rangeNote = "is too few for a 95% interval; the interval is the range"

// IsRangeNote reports whether a summary warning only says that the
// interval is the sample's range because n is below 6. With the default
// five repeats every summary carries it, so reports show it once instead
// of flagging every value.
func IsRangeNote(w string) bool { return strings.HasPrefix(w, "n=") && strings.Contains(w, rangeNote) }

// Notable reports whether s has a warning other than the range note
// (too few repeats, noisy, outliers, no measurements).
func Notable(s Summary) bool {
	for _, w := range s.Warnings {
		if !IsRangeNote(w) {
			return true
		}
	}
	return false
}

// Clean returns the finite values of xs (NaN and ±Inf are dropped), in
// their original order.
func Clean(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, v := range xs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// CIHalfPct is the larger distance from the median to a bound of the
// confidence interval, in percent of the median, as benchstat prints it
// ("± 2%"). It is 0 when the median is 0 or n is 0.
func (s Summary) CIHalfPct() float64 {
	if s.N == 0 || s.Median == 0 {
		return 0
	}
	d := math.Max(s.Median-s.CI95Low, s.CI95High-s.Median)
	return 100 * math.Abs(d/s.Median)
}

// Outliers returns the values further than OutlierFactor median absolute
// deviations from the median (scaled MAD, consistent with σ for normal
// data) and further than OutlierMinDeviation × |median|.
func Outliers(values []float64) []float64 {
	if len(values) < 4 {
		return nil
	}
	xs := append([]float64(nil), values...)
	sort.Float64s(xs)
	med := stat.Quantile(0.5, stat.Empirical, xs, nil)
	dev := make([]float64, len(xs))
	for i, v := range xs {
		dev[i] = math.Abs(v - med)
	}
	sort.Float64s(dev)
	mad := 1.4826 * stat.Quantile(0.5, stat.Empirical, dev, nil)
	limit := math.Max(OutlierFactor*mad, OutlierMinDeviation*math.Abs(med))
	if limit == 0 {
		return nil
	}
	var out []float64
	for _, v := range xs {
		if math.Abs(v-med) > limit {
			out = append(out, v)
		}
	}
	return out
}

// Comparison is the result of comparing two samples of one metric.
type Comparison struct {
	Old, New Summary
	// P is the Mann–Whitney U test p-value that both come from one distribution.
	P     float64
	Alpha float64
	// DeltaPct is (new/old - 1)·100 of the medians; NaN when old is 0.
	DeltaPct    float64
	Significant bool
	// TooFew is set when the sample sizes cannot give any verdict: even
	// completely separated samples would not reach p ≤ Alpha.
	TooFew bool
	// Change is the ratio new/old with its 95 % interval (ChangeInterval);
	// its fields are NaN when no interval exists (too few repeats, values
	// that are zero or negative).
	Change   Change
	Warnings []string
}

// MinP is the smallest two-sided Mann–Whitney U p-value samples of sizes n
// and m can reach (completely separated, no ties): 2 / C(n+m, n).
func MinP(n, m int) float64 {
	if n < 1 || m < 1 {
		return 1
	}
	c := 1.0 // C(n+m, n), computed incrementally
	for i := 1; i <= n; i++ {
		c = c * float64(m+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// NeededEach is the smallest number of repeats per side for which a
// significance test at alpha is possible.
func NeededEach(alpha float64) int {
	for k := 1; k < 100; k++ {
		if MinP(k, k) <= alpha {
			return k
		}
	}
	return 100
}

// TooFewMessage says why n against m repeats can give no verdict at alpha.
func TooFewMessage(n, m int, alpha float64) string {
	return fmt.Sprintf("n=%d vs %d: too few repeats for a significance test at alpha=%g (the smallest possible p is %.2g); need >= %d each",
		n, m, alpha, MinP(n, m), NeededEach(alpha))
}

// Compare runs a two-sided Mann–Whitney U test of old against new. NaN and
// infinite values are ignored, like in Summarize.
func Compare(old, new []float64) Comparison {
	so, sn := Summarize(old), Summarize(new)
	c := Comparison{Old: so, New: sn, Alpha: benchmath.DefaultThresholds.CompareAlpha, DeltaPct: math.NaN(),
		Change: Change{Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}}
	if so.N == 0 || sn.N == 0 {
		c.P = 1
		c.Warnings = append(c.Warnings, "one side has no measurements")
		return c
	}
	if MinP(so.N, sn.N) > c.Alpha {
		c.TooFew = true
		c.Warnings = append(c.Warnings, TooFewMessage(so.N, sn.N, c.Alpha))
	}
	a := benchmath.NewSample(Clean(old), &benchmath.DefaultThresholds)
	b := benchmath.NewSample(Clean(new), &benchmath.DefaultThresholds)
	bc := benchmath.AssumeNothing.Compare(a, b)
	c.P = bc.P
	for _, w := range bc.Warnings {
		if c.TooFew && strings.Contains(w.Error(), "samples to detect a difference") {
			continue // said above, with the figures
		}
		c.Warnings = append(c.Warnings, w.Error())
	}
	if so.Median != 0 {
		c.DeltaPct = (sn.Median/so.Median - 1) * 100
	}
	c.Significant = c.P <= c.Alpha
	if ch, err := ChangeInterval(old, new, Confidence); err == nil {
		c.Change = ch
	}
	return c
}
