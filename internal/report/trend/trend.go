// Package trend follows metrics across an ordered series of results
// documents (one per release, commit or night: the points): runs are
// matched across points by their labels, each cell's medians form a
// series with their 95 % intervals, and change points are flagged by
// E-divisive means with a permutation test (edivisive.go), each with the
// segments' medians before and after, the change in percent and its
// direction, and a Mann–Whitney U test on the pooled repeats of the two
// segments. Output: a self-contained HTML page and Markdown (render.go).
package trend

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// Point is one results document of the series.
type Point struct {
	// Name is shown on the x axis and in tables (the file's directory or
	// a --point-label value).
	Name string
	Set  *result.Set
}

// Options control the analysis; zero values take the defaults.
type Options struct {
	// Metrics to follow; empty: report.DefaultMetrics of each cell's test.
	Metrics []string
	// Match matches runs across points on these labels only (like
	// compare --match); empty: on all labels.
	Match []string
	// Alpha is the permutation test's significance level (DefaultAlpha).
	Alpha float64
	// MinShift is the relative change of the segments' medians below which
	// a change point is not flagged (0.02 is 2 %); 0 means DefaultMinShift,
	// a negative value no minimum.
	MinShift float64
	// Permutations per test (DefaultPermutations) and their Seed.
	Permutations int
	Seed         uint64
}

// UsageError is a bad option or input (too few points, an unknown metric,
// ambiguous --match); the message names the flag and the fix.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Trend is a finished analysis.
type Trend struct {
	Points  []Point
	Options Options // with the defaults filled in
	Series  []*Series
}

// Series is one cell's metric across the points.
type Series struct {
	// Labels identify the cell (projected on Options.Match).
	Labels map[string]string
	Metric string
	// Samples has one entry per point (Present false where the point has
	// no such run or metric).
	Samples []Sample
	Changes []Change
}

// Sample is one point's measurement of a series.
type Sample struct {
	Present bool
	Summary stats.Summary
	Values  []float64
}

// Change is a flagged change point.
type Change struct {
	// Index is the first point after the change; the segments are the
	// points [From, Index) and [Index, To) between the neighbouring
	// change points.
	Index, From, To int
	// Before and After are the medians of the segments' per-point medians.
	Before, After float64
	// DeltaPct is (After/Before − 1)·100.
	DeltaPct float64
	// Better is +1 for an improvement, −1 for a regression, 0 for a
	// metric without a better direction.
	Better int
	// P is the Mann–Whitney U p-value of the two segments' pooled repeats
	// (stats.Compare); PermP the E-divisive permutation test's.
	P, PermP float64
	// Warnings of the Mann–Whitney comparison (too few repeats, …).
	Warnings []string
}

// MinPoints is the smallest series Analyze accepts.
const MinPoints = 3

// Analyze matches the points' runs and finds the change points.
func Analyze(points []Point, o Options) (*Trend, error) {
	if len(points) < MinPoints {
		return nil, &UsageError{fmt.Sprintf("a trend needs at least %d results files in series order, got %d; give more RUN arguments", MinPoints, len(points))}
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Alpha <= 0 || o.Alpha >= 1 {
		return nil, &UsageError{fmt.Sprintf("--alpha %v: must be between 0 and 1 (e.g. 0.05)", o.Alpha)}
	}
	switch {
	case o.MinShift == 0:
		o.MinShift = DefaultMinShift
	case o.MinShift < 0:
		o.MinShift = 0
	}
	if o.Permutations <= 0 {
		o.Permutations = DefaultPermutations
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	t := &Trend{Points: points, Options: o}

	// Index every point's runs by their projected labels.
	index := make([]map[string]*result.Run, len(points))
	cells := map[string]map[string]string{}
	for i, p := range points {
		index[i] = map[string]*result.Run{}
		for j := range p.Set.Runs {
			run := &p.Set.Runs[j]
			l := project(run.Labels, o.Match)
			k := result.LabelKey(l)
			if prev, dup := index[i][k]; dup {
				return nil, &UsageError{fmt.Sprintf("--match %s: point %s has several runs with %s (%s and %s); name labels that tell them apart in --match",
					matchText(o.Match), p.Name, k, result.LabelKey(prev.Labels), result.LabelKey(run.Labels))}
			}
			index[i][k] = run
			cells[k] = l
		}
	}
	keys := make([]string, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	sortCells(keys, cells)

	found := map[string]bool{}
	for _, k := range keys {
		runs := make([]*result.Run, len(points))
		for i := range points {
			runs[i] = index[i][k]
		}
		metrics := o.Metrics
		if len(metrics) == 0 {
			metrics = report.DefaultMetrics(cells[k][report.LabelTest])
		}
		for _, m := range metrics {
			s := &Series{Labels: cells[k], Metric: m, Samples: make([]Sample, len(points))}
			n := 0
			for i, r := range runs {
				if r == nil {
					continue
				}
				if sum, ok := report.Summary(r, m); ok {
					s.Samples[i] = Sample{Present: true, Summary: sum, Values: report.Values(r, m)}
					n++
				}
			}
			if n == 0 {
				continue
			}
			found[m] = true
			s.Changes = changes(s, o)
			t.Series = append(t.Series, s)
		}
	}
	for _, m := range o.Metrics {
		if !found[m] {
			return nil, &UsageError{fmt.Sprintf("--metrics %s: no run of any point has this metric; see docs/results.md for the names", m)}
		}
	}
	return t, nil
}

func matchText(match []string) string {
	if len(match) == 0 {
		return "(all labels)"
	}
	return strings.Join(match, ",")
}

// project keeps the labels named in match (all when match is empty), and
// always cpu_profile, as compare does: a profiled cell never matches an
// unprofiled one.
func project(l map[string]string, match []string) map[string]string {
	if len(match) == 0 {
		return l
	}
	out := make(map[string]string, len(match)+1)
	for _, k := range append(slices.Clone(match), report.LabelCPUProfile) {
		if v, ok := l[k]; ok {
			out[k] = v
		}
	}
	return out
}

// sortCells orders cell keys by their labels in the report's order.
func sortCells(keys []string, cells map[string]map[string]string) {
	var names []string
	vals := map[string][]string{}
	for _, l := range cells {
		for k, v := range l {
			if _, ok := vals[k]; !ok {
				names = append(names, k)
			}
			vals[k] = append(vals[k], v)
		}
	}
	report.SortLabelKeys(names)
	rank := map[string]map[string]int{}
	for _, k := range names {
		rank[k] = map[string]int{}
		for i, v := range report.SortValues(k, vals[k]) {
			rank[k][v] = i + 1 // 0: label absent, first
		}
	}
	sort.SliceStable(keys, func(a, b int) bool {
		la, lb := cells[keys[a]], cells[keys[b]]
		for _, k := range names {
			if ra, rb := rank[k][la[k]], rank[k][lb[k]]; ra != rb {
				return ra < rb
			}
		}
		return keys[a] < keys[b]
	})
}

// changes runs the detection on the present medians of s.
func changes(s *Series, o Options) []Change {
	var z []float64
	var at []int // point index of z[i]
	for i, smp := range s.Samples {
		if smp.Present {
			z = append(z, smp.Summary.Median)
			at = append(at, i)
		}
	}
	splits := pruneSmall(z, eDivisive(z, o.Alpha, o.Permutations, o.Seed), o.MinShift)
	better := result.Info(s.Metric).Better
	var out []Change
	for j, sp := range splits {
		from, to := 0, len(z)
		if j > 0 {
			from = splits[j-1].At
		}
		if j+1 < len(splits) {
			to = splits[j+1].At
		}
		var before, after []float64
		for i := from; i < sp.At; i++ {
			before = append(before, s.Samples[at[i]].Values...)
		}
		for i := sp.At; i < to; i++ {
			after = append(after, s.Samples[at[i]].Values...)
		}
		c := Change{Index: at[sp.At], From: at[from], PermP: sp.P}
		c.To = len(s.Samples)
		if to < len(z) {
			c.To = at[to]
		}
		c.Before, c.After = median(z[from:sp.At]), median(z[sp.At:to])
		c.DeltaPct = math.NaN()
		if c.Before != 0 {
			c.DeltaPct = (c.After/c.Before - 1) * 100
		}
		cmp := stats.Compare(before, after)
		c.P, c.Warnings = cmp.P, cmp.Warnings
		up := c.After > c.Before
		switch better {
		case result.HigherIsBetter:
			c.Better = sign(up)
		case result.LowerIsBetter:
			c.Better = -sign(up)
		}
		out = append(out, c)
	}
	return out
}

func sign(up bool) int {
	if up {
		return 1
	}
	return -1
}

// Changes returns every flagged change of t, in series order.
func (t *Trend) Changes() []FlaggedChange {
	var out []FlaggedChange
	for _, s := range t.Series {
		for _, c := range s.Changes {
			out = append(out, FlaggedChange{Series: s, Change: c})
		}
	}
	return out
}

// FlaggedChange is a change with its series.
type FlaggedChange struct {
	Series *Series
	Change
}

// Regressions counts the flagged regressions.
func (t *Trend) Regressions() int {
	n := 0
	for _, c := range t.Changes() {
		if c.Better < 0 {
			n++
		}
	}
	return n
}

// Span is the points' time range ("2026-01-01 → 2026-01-09"), empty when
// the documents carry no start times.
func (t *Trend) Span() string {
	var first, last time.Time
	for _, p := range t.Points {
		if p.Set.Start.IsZero() {
			continue
		}
		if first.IsZero() || p.Set.Start.Before(first) {
			first = p.Set.Start
		}
		if p.Set.Start.After(last) {
			last = p.Set.Start
		}
	}
	if first.IsZero() {
		return ""
	}
	return first.UTC().Format("2006-01-02") + " → " + last.UTC().Format("2006-01-02")
}
