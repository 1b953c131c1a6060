// Package compare compares cnibench results in the manner of benchstat:
// for every matching run and metric, the medians with their confidence
// intervals, the change in percent and a Mann–Whitney U test; "~" where
// the difference is not significant. It compares files (OLD against each
// NEW) or, inside one results file, every value of one label against a
// baseline value: every datapath against the baseline datapath, every
// egress mechanism against none, ...
package compare

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// Input is one results document and the name shown for it (usually its path).
type Input struct {
	Name string
	Set  *result.Set
}

// Mode says what is compared: ByFile, or the name of the label whose
// values are compared inside one file (ByDatapath, "mechanism", "rules", ...).
type Mode string

const (
	// ByFile compares runs with identical labels across files.
	ByFile Mode = "file"
	// ByDatapath compares every datapath of one file with a baseline datapath.
	ByDatapath Mode = "datapath"
)

// fallbackIgnore names, for a compared label, the further labels ignored
// when a run has no baseline counterpart with them equal: the node-to-node
// baseline datapath has no cross-node or same-node runs (path), the egress
// mechanism none has no new-connection traversal (nothing to bypass), and a
// path's placement is part of the path (same-node's server is the client's
// node, external-to-loadbalancer's client is no node at all).
var fallbackIgnore = map[string][]string{
	report.LabelDatapath: {report.LabelPath},
	"mechanism":          {"traversal"},
	report.LabelPath:     {"client_node", "server_node", "client_zone", "server_zone"},
}

// Options control a comparison.
type Options struct {
	Mode Mode
	// Baseline is the reference value of the compared label (default for
	// ByDatapath: report.BaselineDatapath; required otherwise).
	Baseline string
	// Metrics to compare; empty means the default metrics of each run's
	// test (report.DefaultMetrics).
	Metrics []string
	// Match, in ByFile mode, matches runs on these labels only (e.g.
	// path,test,flows to put a cluster's runs next to a lab's, whose
	// datapath, backend and node labels differ); empty: on all labels.
	Match []string
}

// project keeps the labels named in match (all when match is empty), and
// always cpu_profile: a profiled cell never matches an unprofiled one.
func project(l map[string]string, match []string) map[string]string {
	if len(match) == 0 {
		return l
	}
	out := make(map[string]string, len(match))
	for _, k := range append(match, report.LabelCPUProfile) {
		if v, ok := l[k]; ok {
			out[k] = v
		}
	}
	return out
}

// UsageError is a bad option value (unknown metric or baseline). The
// message names the option and the fix.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Result is a finished comparison.
type Result struct {
	Mode Mode
	// Base names the reference: the first file, or the baseline datapath.
	Base string
	// Inputs are the file names, in the order given.
	Inputs []string
	Tables []*Table
	// Unmatched counts the runs left out because they have no
	// counterpart in the baseline (ByDatapath: e.g. scenario runs the
	// baseline did not run).
	Unmatched int
	// ProfileNotes say which cells were CPU-profiled on one side only
	// (their labels differ by cpu_profile, so they are not compared).
	ProfileNotes []string
	// HostNotes say how the compared files' machines differ (CPU model,
	// cores, kernel) or that a run was interrupted: a difference between
	// them is then not the datapath's alone.
	HostNotes []string
	// ConfigNotes say which compared cells differ in configuration beyond
	// their labels (flows, message size, duration, pinning, MTU, kernel,
	// cnibench version), with both values.
	ConfigNotes []string
	// Ignored are the labels left out of the matching of --by across
	// files (with why): the files' own (cluster, nodes, the CNI's
	// configuration with --by cni).
	Ignored []string
	// GateResult is the regression gate's outcome (Gate); nil when the
	// comparison was not gated.
	GateResult *GateResult
	// Tests counts the rows with a p-value (compared cells × metrics, of
	// every table) the q-values adjust for: the family.
	Tests int
}

// Table compares one metric.
type Table struct {
	Metric string
	// Columns: the reference first, then one per compared input (ByFile)
	// or a single "datapath" column (ByDatapath).
	Columns []string
	Rows    []*Row
	// Sweep, when set, says the rows are points of a sweep's curves
	// (curves.go); Curves summarise them.
	Sweep  *Sweep
	Curves []Curve
}

// Row is one matched cell of the matrix.
type Row struct {
	// Labels identify the row (for ByDatapath: the compared run's labels).
	Labels map[string]string
	// BaseLabels are the labels of the reference run (for ByDatapath the
	// baseline's path differs).
	BaseLabels map[string]string
	Base       Side
	Cells      []Cell
}

// Side is one measured sample.
type Side struct {
	Present bool
	Summary stats.Summary
	Values  []float64
}

// Cell is one compared sample and its comparison with the row's base.
type Cell struct {
	Side
	Compared bool // both sides present
	// DeltaPct is the change of the median in percent; DeltaPP, for
	// metrics that are shares in percent (IsShare), the change in
	// percentage points (NaN otherwise).
	DeltaPct    float64
	DeltaPP     float64
	P           float64
	Alpha       float64
	Significant bool
	// TooFew: the repeats on the two sides cannot give any verdict.
	TooFew bool
	// Change is the ratio NEW/OLD with its 95 % interval (stats.Compare;
	// NaN fields when there is none).
	Change stats.Change
	// Better is +1 when the change is an improvement, -1 when it is a
	// regression, 0 when not significant or neutral.
	Better   int
	Warnings []string // comparison warnings (sample warnings are in Summary)
	// Mismatch lists how the cell's configuration differs from the base's
	// beyond their labels (configMismatch); NotTrusted is either side's
	// busy-host verdict. The gate judges neither.
	Mismatch   []string
	NotTrusted string
	// Q is the Benjamini–Hochberg q-value (HasQ) of the cell's p-value,
	// adjusted over every row with a p-value of the comparison (qValues).
	Q    float64
	HasQ bool
}

// Compare matches runs and compares them.
func Compare(inputs []Input, o Options) (*Result, error) {
	if o.Mode == "" {
		o.Mode = ByFile
	}
	r := &Result{Mode: o.Mode}
	for _, in := range inputs {
		r.Inputs = append(r.Inputs, in.Name)
	}
	var pairs []pair
	var columns []string
	// --by across files: the compared cells whose settings differ from
	// their baseline's, per file.
	var cross *crossPairs
	var err error
	switch o.Mode {
	case ByFile:
		pairs, columns, err = pairsByFile(inputs, o, r)
	default:
		pairs, columns, cross, err = pairsByLabel(inputs, &o, r)
	}
	if err != nil {
		return nil, err
	}

	// Metrics.
	available := map[string]bool{}
	for _, in := range inputs {
		for _, run := range in.Set.Runs {
			for k := range run.Summary {
				available[k] = true
			}
			for _, rep := range run.Repeats {
				for k := range rep.Metrics {
					available[k] = true
				}
			}
		}
	}
	for _, mt := range o.Metrics {
		if !available[mt] {
			var names []string
			for k := range available {
				names = append(names, k)
			}
			sort.Strings(names)
			return nil, &UsageError{fmt.Sprintf("--metrics %s: no run has this metric (available: %s)", mt, strings.Join(names, ", "))}
		}
	}
	metricsFor := func(labels map[string]string) []string {
		if len(o.Metrics) > 0 {
			return o.Metrics
		}
		if t := labels[report.LabelTest]; t != "" {
			return report.DefaultMetrics(t)
		}
		return []string{result.ThroughputBitsPerSec, result.TransPerSec, result.LatencyUsP99, result.CPUPctPer100Gbit, result.CPUUsPerTrans}
	}
	tables := map[string]*Table{}
	mismatched := map[int][]cellMismatch{}
	sweeps := curveSweeps(sweepsOf(inputs), pairs, o.Mode)
	for _, p := range pairs {
		mts := metricsFor(p.labels)
		if len(o.Metrics) == 0 {
			mts = append(slices.Clone(mts), shareMetrics(append([]*result.Run{p.base}, p.others...))...)
			mts = append(pointMetrics(sweeps, p), mts...)
		}
		for _, mt := range mts {
			row := &Row{Labels: p.labels, BaseLabels: p.baseLabels}
			if p.base != nil {
				row.Base = side(p.base, mt)
			}
			any := row.Base.Present
			for j, other := range p.others {
				var c Cell
				if other != nil {
					c.Side = side(other, mt)
				}
				any = any || c.Present
				if c.Present && row.Base.Present {
					if o.Mode == ByFile {
						c.Mismatch = configMismatch(p.base, other, inputs[0].Set, inputs[j+1].Set)
						if len(c.Mismatch) > 0 {
							mismatched[j+1] = appendMismatch(mismatched[j+1], p.labels, c.Mismatch)
						}
					}
					c.NotTrusted = trustNote(p.base, other)
					cmp := stats.Compare(row.Base.Values, c.Values)
					c.Compared = true
					c.DeltaPct, c.P, c.Alpha, c.Significant, c.Warnings = cmp.DeltaPct, cmp.P, cmp.Alpha, cmp.Significant, cmp.Warnings
					c.TooFew, c.Change = cmp.TooFew, cmp.Change
					c.DeltaPP = math.NaN()
					if IsShare(mt) {
						c.DeltaPP = c.Summary.Median - row.Base.Summary.Median
					}
					if c.Significant {
						c.Better = direction(mt, c.DeltaPct)
					}
				}
				row.Cells = append(row.Cells, c)
			}
			if !any {
				continue
			}
			t := tables[mt]
			if t == nil {
				t = &Table{Metric: mt, Columns: columns}
				tables[mt] = t
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if len(tables) == 0 {
		if o.Mode == ByFile {
			return nil, fmt.Errorf("nothing to compare: %s have no runs with the same labels and the chosen metrics", strings.Join(r.Inputs, " and "))
		}
		return nil, fmt.Errorf("nothing to compare: %s has no runs besides the baseline %s with the chosen metrics", r.Inputs[0], o.Baseline)
	}
	// Table order: --metrics order, else a fixed preference.
	order := o.Metrics
	if len(order) == 0 {
		order = []string{result.ThroughputBitsPerSec, result.TransPerSec, result.LatencyUsP99, result.LossPct, result.CPUPctPer100Gbit, result.CPUUsPerTrans}
		var rest []string
		for mt := range tables {
			if indexOf(order, mt) < 0 {
				rest = append(rest, mt)
			}
		}
		sort.Strings(rest)
		order = append(append([]string(nil), order...), rest...)
	}
	r.ConfigNotes = mismatchNotes(func(i int) string { return inputs[i].Name }, mismatched)
	if cross != nil && cross.file.ownedDiffer {
		r.Ignored = append(r.Ignored, "(settings) pod_mtu, path_mtu: the CNI's MTU, part of what is compared")
	}
	if cross != nil && len(cross.mismatch) > 0 {
		// mismatchNotes names the reference as index 0 and each other
		// file by its index: shift the files by one behind the baseline's.
		shifted := map[int][]cellMismatch{}
		for i, ms := range cross.mismatch {
			shifted[i+1] = ms
		}
		r.ConfigNotes = append(r.ConfigNotes, mismatchNotes(func(i int) string {
			if i == 0 {
				return inputs[cross.base].Name
			}
			return inputs[i-1].Name
		}, shifted)...)
	}
	dpOrder := datapathOrder(inputs)
	curves := splitSweeps(tables, order, sweeps, len(o.Metrics) == 0)
	for _, mt := range order {
		if t := tables[mt]; t != nil {
			sortRows(t.Rows, dpOrder)
			r.Tables = append(r.Tables, t)
		}
	}
	for _, t := range curves {
		sortCurveRows(t.Rows, t.Sweep, dpOrder)
		r.Tables = append(r.Tables, t)
	}
	r.qValues()
	return r, nil
}

// direction is +1 when a change of delta percent in metric is an
// improvement, -1 when it is a regression, 0 when it is neither (no
// change, no direction, undefined).
func direction(metric string, delta float64) int {
	if math.IsNaN(delta) {
		return 0
	}
	switch result.Info(metric).Better {
	case result.HigherIsBetter:
		return sign(delta)
	case result.LowerIsBetter:
		return -sign(delta)
	}
	return 0
}

func sign(x float64) int {
	if x > 0 {
		return 1
	}
	if x < 0 {
		return -1
	}
	return 0
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

func side(run *result.Run, metric string) Side {
	vals := report.Values(run, metric)
	s, ok := report.Summary(run, metric)
	if ok && len(vals) == 0 {
		// Only a stored summary, no raw repeats: shown, but the U test
		// has nothing to work on.
		return Side{Present: true, Summary: s}
	}
	return Side{Present: ok, Summary: s, Values: vals}
}

// matchBaseline finds the baseline run for labels: all labels except bys
// equal; failing that, all except bys and the fallbackIgnore label of a
// single --by label.
//
// norm, when not nil, is what is matched of the labels (--by across
// files: without the labels that belong to each file).
func matchBaseline(base []*result.Run, labels map[string]string, bys []string, norm func(map[string]string) map[string]string) *result.Run {
	ignores := [][]string{nil}
	if len(bys) == 1 {
		if f := fallbackIgnore[bys[0]]; f != nil {
			ignores = append(ignores, f)
		}
	}
	if norm == nil {
		norm = func(l map[string]string) map[string]string { return l }
	}
	labels = norm(labels)
	for _, ignore := range ignores {
		for _, b := range base {
			if sameExcept(norm(b.Labels), labels, bys, ignore) {
				return b
			}
		}
	}
	return nil
}

// sameExcept reports whether a and b agree on every label but bys and
// ignore (nil ignores nothing more).
func sameExcept(a, b map[string]string, bys, ignore []string) bool {
	skip := func(k string) bool { return slices.Contains(bys, k) || slices.Contains(ignore, k) }
	for k, v := range a {
		if !skip(k) && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if !skip(k) && a[k] != v {
			return false
		}
	}
	return true
}

// labelNames lists the label keys of set's runs, sorted.
func labelNames(set *result.Set) []string {
	seen := map[string]bool{}
	var out []string
	for _, run := range set.Runs {
		for k := range run.Labels {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
