package compare

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// pair is one compared cell: its labels, the baseline's run (and labels,
// with --by) and the other side's runs, one per other file.
type pair struct {
	labels, baseLabels map[string]string
	base               *result.Run
	others             []*result.Run
}

// pairsByFile matches the runs of several files by their labels (or
// o.Match), the first file the baseline; it sets r's base, host and
// profile notes.
func pairsByFile(inputs []Input, o Options, r *Result) ([]pair, []string, error) {
	var pairs []pair
	var columns []string
	if len(inputs) < 2 {
		return nil, nil, &UsageError{"compare needs at least two files (OLD NEW), or --by datapath with one file"}
	}
	r.Base = inputs[0].Name
	r.HostNotes = hostNotes(inputs)
	for _, in := range inputs {
		columns = append(columns, in.Name)
	}
	single := true
	for _, in := range inputs {
		single = single && len(in.Set.Runs) == 1
	}
	if single {
		// Two `cnibench run` results: compare them whatever their labels
		// (their targets usually differ).
		p := pair{labels: inputs[0].Set.Runs[0].Labels, base: &inputs[0].Set.Runs[0]}
		for _, in := range inputs[1:] {
			p.others = append(p.others, &in.Set.Runs[0])
		}
		return []pair{p}, columns, nil
	}
	index := make([]map[string]*result.Run, len(inputs))
	var all []map[string]string
	seen := map[string]bool{}
	for i, in := range inputs {
		index[i] = map[string]*result.Run{}
		for j := range in.Set.Runs {
			run := &in.Set.Runs[j]
			l := project(run.Labels, o.Match)
			k := result.LabelKey(l)
			if prev, dup := index[i][k]; !dup {
				index[i][k] = run
			} else if len(o.Match) > 0 {
				return nil, nil, &UsageError{fmt.Sprintf("--match %s: %s has several runs with %s (%s and %s); add a label that tells them apart",
					strings.Join(o.Match, ","), in.Name, k, result.LabelKey(prev.Labels), result.LabelKey(run.Labels))}
			}
			if !seen[k] {
				seen[k] = true
				all = append(all, l)
			}
		}
	}
	for _, l := range all {
		k := result.LabelKey(l)
		p := pair{labels: l, base: index[0][k]}
		n := 0
		for i := 1; i < len(inputs); i++ {
			p.others = append(p.others, index[i][k])
			if index[i][k] != nil {
				n++
			}
		}
		if p.base != nil || n > 0 {
			pairs = append(pairs, p)
		}
	}
	r.ProfileNotes = profileNotes(inputs, index)
	return pairs, columns, nil
}
