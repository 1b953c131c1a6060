package comparecmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// where is --where: the runs to compare, by label. A run is kept when, for
// every condition, its label is one of the condition's values. With --by,
// the baseline's runs are always kept (they are what the others are
// compared with).
type where map[string][]string

// parseWhere parses --where's values: LABEL=V1[|V2…], comma-separated or
// repeated.
func parseWhere(vals []string) (where, error) {
	w := where{}
	for _, v := range vals {
		for _, c := range strings.Split(v, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			k, alts, ok := strings.Cut(c, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("--where %q: give LABEL=VALUE[|VALUE…], e.g. --where path=cross-node,datapath=veth-routing|ebpf-host-routing", c)
			}
			n := len(w[k])
			for _, a := range strings.Split(alts, "|") {
				if a = strings.TrimSpace(a); a != "" {
					w[k] = append(w[k], a)
				}
			}
			if len(w[k]) == n {
				return nil, fmt.Errorf("--where %q: no value; give LABEL=VALUE[|VALUE…]", c)
			}
		}
	}
	return w, nil
}

// keep tells whether a run's labels pass every condition.
func (w where) keep(l map[string]string) bool {
	for k, vs := range w {
		if !slices.Contains(vs, l[k]) {
			return false
		}
	}
	return true
}

// filter returns a copy of set with the runs w keeps and, with --by
// (labels by, values baseline), the baseline's runs. It fails when no run
// is left to compare.
func (w where) filter(set *result.Set, by, baseline string, name string) (*result.Set, error) {
	if len(w) == 0 {
		return set, nil
	}
	var byLabels, baseVals []string
	if by != "" && by != "file" {
		byLabels = strings.Split(by, ",")
		if baseline == "" && by == "datapath" {
			baseline = report.BaselineDatapath
		}
		baseVals = strings.Split(baseline, ",")
	}
	isBase := func(l map[string]string) bool {
		if len(byLabels) == 0 || len(byLabels) != len(baseVals) {
			return false
		}
		for i, k := range byLabels {
			if l[strings.TrimSpace(k)] != strings.TrimSpace(baseVals[i]) {
				return false
			}
		}
		return true
	}
	out := *set
	out.Runs = nil
	kept := 0
	for _, r := range set.Runs {
		switch {
		case w.keep(r.Labels):
			kept++
			out.Runs = append(out.Runs, r)
		case isBase(r.Labels):
			out.Runs = append(out.Runs, r)
		}
	}
	if kept == 0 {
		return nil, fmt.Errorf("--where: no run of %s has those labels; see its labels with cnibench report %s", name, name)
	}
	return &out, nil
}
