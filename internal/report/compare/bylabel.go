package compare

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// crossPairs is what --by across files adds to its pairs: the pooled
// files, and per file the compared cells whose settings differ from their
// baseline's (base: the baseline's file).
type crossPairs struct {
	file     *crossFile
	mismatch map[int][]cellMismatch
	base     int
}

// pairsByLabel pairs every run with the run of the baseline value of the
// --by label(s) (o.Baseline, defaulted for --by datapath) that agrees on
// every other label, in one file or pooled from several; it sets r's base,
// host notes, ignored labels and unmatched count.
func pairsByLabel(inputs []Input, o *Options, r *Result) ([]pair, []string, *crossPairs, error) {
	var pairs []pair
	var columns []string
	var cf *crossFile
	cross := &crossPairs{mismatch: map[int][]cellMismatch{}}
	by := string(o.Mode)
	if len(inputs) == 0 {
		return nil, nil, nil, &UsageError{fmt.Sprintf("--by %s: no results file", by)}
	}
	// --by A,B --baseline a,b compares every combination of A and B
	// with the baseline's (e.g. lb_mode,transport: dsr+direct against
	// snat+vxlan); the runs must agree on every other label.
	bys := strings.Split(by, ",")
	set := inputs[0].Set
	key := func(l map[string]string) (string, bool) {
		var vs []string
		for _, b := range bys {
			v, ok := l[b]
			if !ok || v == "" {
				return "", false
			}
			vs = append(vs, v)
		}
		return strings.Join(vs, ","), true
	}
	// Several files: each value of the label from one file (one CNI
	// per cluster), their runs pooled into one set.
	if len(inputs) > 1 {
		var err error
		if cf, err = poolBy(inputs, by, bys, key); err != nil {
			return nil, nil, nil, err
		}
		set = cf.set
		r.HostNotes = hostNotes(inputs)
		r.Ignored = cf.ignored
	}
	inName := inputs[0].Name
	if cf != nil {
		inName = strings.Join(r.Inputs, ", ")
	}
	var vals []string
	seen := map[string]bool{}
	for i := range set.Runs {
		if v, ok := key(set.Runs[i].Labels); ok && !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return nil, nil, nil, &UsageError{fmt.Sprintf("--by %s: no run in %s has that label (labels: %s)", by, inName, strings.Join(labelNames(set), ", "))}
	}
	sep := "; " // values of several labels contain commas
	if len(bys) == 1 {
		vals, sep = report.SortValues(by, vals), ", "
	}
	if o.Baseline == "" {
		if o.Mode != ByDatapath {
			return nil, nil, nil, &UsageError{fmt.Sprintf("--baseline: name the reference %s for --by %s (values: %s)", by, by, strings.Join(vals, sep))}
		}
		o.Baseline = report.BaselineDatapath
	}
	// (with one label the whole --baseline is its value, commas and all:
	// cni_mode values such as "vxlan, iptables dataplane" hold commas)
	if n := len(strings.Split(o.Baseline, ",")); len(bys) > 1 && n != len(bys) {
		return nil, nil, nil, &UsageError{fmt.Sprintf("--baseline %s: give one value for each label of --by %s (%d), separated by commas", o.Baseline, by, len(bys))}
	}
	r.Base = o.Baseline
	columns = []string{o.Baseline, by}
	var baseRuns []*result.Run
	for i := range set.Runs {
		if v, _ := key(set.Runs[i].Labels); v == o.Baseline {
			baseRuns = append(baseRuns, &set.Runs[i])
		}
	}
	if len(baseRuns) == 0 {
		has := "has"
		if cf != nil {
			has = "have"
		}
		return nil, nil, nil, &UsageError{fmt.Sprintf("--baseline %s: %s %s no runs with %s=%s (values: %s)",
			o.Baseline, inName, has, by, o.Baseline, strings.Join(vals, sep))}
	}
	for i := range set.Runs {
		run := &set.Runs[i]
		if v, ok := key(run.Labels); !ok || v == o.Baseline {
			continue
		}
		var norm func(map[string]string) map[string]string
		if cf != nil {
			norm = cf.norm
		}
		b := matchBaseline(baseRuns, run.Labels, bys, norm)
		if b == nil {
			r.Unmatched++
			continue
		}
		pairs = append(pairs, pair{labels: run.Labels, base: b, baseLabels: b.Labels, others: []*result.Run{run}})
		if cf != nil {
			// Cells of two files: the same measurement only if their
			// settings agree (configMismatch), noted per file.
			bi, oi := cf.origin[b], cf.origin[run]
			if d := cf.mismatch(b, run, inputs[bi].Set, inputs[oi].Set); len(d) > 0 {
				cross.mismatch[oi] = appendMismatch(cross.mismatch[oi], run.Labels, d)
				cross.base = bi
			}
		}
	}
	if cf == nil {
		return pairs, columns, nil, nil
	}
	cross.file = cf
	return pairs, columns, cross, nil
}
