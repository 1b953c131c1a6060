package report

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// Label keys the suite uses.
const (
	LabelDatapath = "datapath"
	LabelPath     = "path"
	LabelTest     = "test"
	LabelFlows    = "flows"
	LabelMTU      = "mtu"
	LabelScenario = "scenario"
	LabelRules    = "rules"
)

// BaselineDatapath is the node-to-node reference datapath.
const BaselineDatapath = "baseline"

// PrimaryMetric is the metric that ranks datapaths for a test: throughput
// for stream tests, the transaction rate for rr, crr and http.
func PrimaryMetric(test string) string {
	if result.IsStream(test) {
		return result.ThroughputBitsPerSec
	}
	return result.TransPerSec
}

// CPUMetric is the normalised CPU cost for a test (seed 000's charts): CPU
// % needed for 100 Gbit/s for streams, CPU µs per transaction otherwise.
func CPUMetric(test string) string {
	if result.IsStream(test) {
		return result.CPUPctPer100Gbit
	}
	return result.CPUUsPerTrans
}

// LatencyMetrics are the percentiles the latency charts show.
var LatencyMetrics = []string{result.LatencyUsP50, result.LatencyUsP90, result.LatencyUsP99, result.LatencyUsP999}

// DefaultMetrics lists the metrics compare shows for a test by default:
// the primary metric, p99 latency (rr/crr/http), UDP loss (udp_stream)
// and the normalised CPU cost.
func DefaultMetrics(test string) []string {
	out := []string{PrimaryMetric(test)}
	if !result.IsStream(test) {
		out = append(out, result.LatencyUsP99)
	}
	if test == result.TestUDPStream {
		out = append(out, result.LossPct)
	}
	return append(out, CPUMetric(test))
}

// order helpers ---------------------------------------------------------

var knownOrder = map[string][]string{
	LabelTest: {result.TestTCPStream, result.TestUDPStream, result.TestTCPRR, result.TestUDPRR, result.TestTCPCRR, result.TestHTTP},
	LabelPath: {"node-to-node", "cross-node", "same-node"},
}

// labelLess orders values of one label: known values first in their usual
// order, numbers numerically, the rest alphabetically.
func labelLess(key, a, b string) bool {
	if ko, ok := knownOrder[key]; ok {
		ia, ib := indexOf(ko, a), indexOf(ko, b)
		if ia >= 0 || ib >= 0 {
			if ia < 0 {
				return false
			}
			if ib < 0 {
				return true
			}
			return ia < ib
		}
	}
	fa, ea := strconv.ParseFloat(a, 64)
	fb, eb := strconv.ParseFloat(b, 64)
	switch {
	case ea == nil && eb == nil:
		if fa != fb {
			return fa < fb
		}
	case ea == nil:
		return true
	case eb == nil:
		return false
	}
	return a < b
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// labelKeyOrder is the order label keys are shown in.
var labelKeyOrder = []string{LabelDatapath, LabelPath, LabelTest, LabelFlows, LabelMTU, LabelScenario, LabelRules}

// SortLabelKeys sorts label keys: the suite's keys in their usual order,
// then the others alphabetically.
func SortLabelKeys(keys []string) { SortKeysBy(labelKeyOrder, keys) }

// SortKeysBy sorts keys in the order given, then the others alphabetically.
func SortKeysBy(order, keys []string) {
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := indexOf(order, keys[i]), indexOf(order, keys[j])
		switch {
		case a >= 0 && b >= 0:
			return a < b
		case a >= 0:
			return true
		case b >= 0:
			return false
		}
		return keys[i] < keys[j]
	})
}

// SortValues sorts values of label key in display order and removes duplicates.
func SortValues(key string, vals []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return labelLess(key, out[i], out[j]) })
	return out
}

// Summary returns the run's summary of metric, computing it from the
// repeats when the stored summary lacks it. ok is false when the run has
// no measurement of the metric.
func Summary(r *result.Run, metric string) (stats.Summary, bool) {
	if s, ok := r.Summary[metric]; ok && s.N > 0 {
		return s, true
	}
	vals := Values(r, metric)
	if len(vals) == 0 {
		return stats.Summary{}, false
	}
	s := stats.Summarize(vals)
	return s, s.N > 0
}

// Values returns the raw per-repeat values of metric (result.UsedRepeats:
// failed repeats left out, busy ones too while clean ones remain).
func Values(r *result.Run, metric string) []float64 {
	var out []float64
	for _, rep := range result.UsedRepeats(r.Repeats) {
		if v, ok := rep.Metrics[metric]; ok {
			out = append(out, v)
		}
	}
	return stats.Clean(out)
}

// model indexes a set for the report.
type model struct {
	set        *result.Set
	datapaths  []string // display order, baseline first
	dpInfo     map[string]result.Datapath
	tests      []string
	defaultMTU string
	main       []*result.Run // scenario "" and the default MTU
	cpu        *[]*cpuGroup  // the CPU-profiled cells (cpuGroups, computed once)
	flames     *Flamegraphs  // rendered flamegraphs (nil: none)
}

func newModel(set *result.Set) *model {
	m := &model{set: set, dpInfo: map[string]result.Datapath{}}
	var dps []string
	for _, d := range set.Datapaths {
		if _, dup := m.dpInfo[d.Name]; !dup {
			m.dpInfo[d.Name] = d
			dps = append(dps, d.Name)
		}
	}
	var extra, tests []string
	mtuCount := map[string]int{}
	for i := range set.Runs {
		l := set.Runs[i].Labels
		// A run without a datapath label (a single `cnibench run`)
		// is listed under "" and shown as "—".
		if dp := l[LabelDatapath]; true {
			if _, ok := m.dpInfo[dp]; !ok && indexOf(extra, dp) < 0 {
				extra = append(extra, dp)
			}
		}
		if l[LabelScenario] == "" {
			mtuCount[l[LabelMTU]]++
		}
		tests = append(tests, l[LabelTest])
	}
	sort.Strings(extra)
	dps = append(dps, extra...)
	if i := indexOf(dps, BaselineDatapath); i > 0 {
		dps = append([]string{BaselineDatapath}, append(dps[:i:i], dps[i+1:]...)...)
	}
	m.datapaths = dps
	m.tests = SortValues(LabelTest, tests)
	best := -1
	for _, mtu := range SortValues(LabelMTU, keys(mtuCount)) {
		if mtuCount[mtu] > best {
			best, m.defaultMTU = mtuCount[mtu], mtu
		}
	}
	for i := range set.Runs {
		r := &set.Runs[i]
		if r.Labels[LabelScenario] == "" && r.Labels[LabelMTU] == m.defaultMTU {
			m.main = append(m.main, r)
		}
	}
	return m
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// find returns the first run of runs whose labels include match.
func find(runs []*result.Run, match map[string]string) *result.Run {
	for _, r := range runs {
		ok := true
		for k, v := range match {
			if r.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

// values lists the distinct values of label key among runs, in display
// order; "" stands for runs without the label.
func values(runs []*result.Run, key string) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Labels[key])
	}
	return SortValues(key, out)
}

// show renders a label value for humans ("—" when the label is missing).
func show(v string) string {
	if v == "" {
		return "—"
	}
	return v
}

func filter(runs []*result.Run, match map[string]string) []*result.Run {
	var out []*result.Run
	for _, r := range runs {
		ok := true
		for k, v := range match {
			if r.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// measured reports whether the datapath has runs (it may be listed but skipped).
func (m *model) measured(dp string) bool {
	for _, r := range m.set.Runs {
		if r.Labels[LabelDatapath] == dp {
			return true
		}
	}
	return false
}

// IgnoredForBaseline reports whether a cell and its baseline's run may
// differ in label k: the path (the baseline is node-to-node) and, on a
// cluster, the server's node and zone (a same-node cell's server is on the
// client's node, the baseline's on another by definition). The datapath
// differs by definition.
func IgnoredForBaseline(k string) bool {
	switch k {
	case LabelDatapath, LabelPath, "server_node", "server_zone":
		return true
	}
	return false
}

// baselineRun finds the baseline's run for the cell of r: same labels
// except those IgnoredForBaseline.
func baselineRun(runs []*result.Run, labels map[string]string) *result.Run {
	want := map[string]string{}
	for k, v := range labels {
		if !IgnoredForBaseline(k) {
			want[k] = v
		}
	}
	want[LabelDatapath] = BaselineDatapath
	var cands []*result.Run
	for _, r := range runs {
		if len(r.Labels) != len(labels) {
			continue
		}
		ok := true
		for k, v := range want {
			if r.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			cands = append(cands, r)
		}
	}
	for _, r := range cands {
		if r.Labels[LabelPath] == "node-to-node" {
			return r
		}
	}
	if len(cands) > 0 {
		return cands[0]
	}
	return nil
}

// skipReason returns the reason a datapath was skipped ("" when it was not).
func (m *model) skipReason(dp string) string {
	if d, ok := m.dpInfo[dp]; ok && d.Skipped != "" {
		return d.Skipped
	}
	for _, s := range m.set.Skipped {
		if len(s.Labels) == 1 && s.Labels[LabelDatapath] == dp {
			return s.Reason
		}
	}
	return ""
}

// MaxRuns bounds the runs a report or a comparison reads: its model
// matches every cell with its baseline and peers by label, which grows
// with the square of the runs (measured: 2 000 runs in 1.7 s, 8 000 in
// 32 s on this project's machine). A suite's standard matrix has about
// 120 runs; a sweep a few hundred.
const MaxRuns = 3000

// CheckSize refuses, in one line, a set too large to report on.
func CheckSize(name string, set *result.Set) error {
	if n := len(set.Runs); n > MaxRuns {
		return fmt.Errorf("%s holds %d runs; a report reads at most %d (a standard suite has about 120): split the file, or use cnibench export for bulk data", name, n, MaxRuns)
	}
	return nil
}
