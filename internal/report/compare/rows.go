package compare

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

func datapathOrder(inputs []Input) map[string]int {
	order := map[string]int{report.BaselineDatapath: -1}
	n := 0
	for _, in := range inputs {
		for _, d := range in.Set.Datapaths {
			if _, ok := order[d.Name]; !ok {
				order[d.Name] = n
				n++
			}
		}
	}
	return order
}

// rowKeyOrder: rows sort by test, flows, mtu, scenario, rules, path, then
// datapath (in the set's order), then any other label.
var rowKeyOrder = []string{report.LabelTest, report.LabelFlows, report.LabelMTU, report.LabelScenario, report.LabelRules, report.LabelPath, report.LabelDatapath}

func sortRows(rows []*Row, dpOrder map[string]int) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].Labels, rows[j].Labels
		for _, k := range rowKeyOrder {
			if va, vb := a[k], b[k]; va != vb {
				return labelBefore(k, va, vb, dpOrder)
			}
		}
		return result.LabelKey(a) < result.LabelKey(b)
	})
}

// labelBefore orders two values of label k: datapaths in the sets'
// order, other values as the report sorts them (numbers numerically).
func labelBefore(k, va, vb string, dpOrder map[string]int) bool {
	if k == report.LabelDatapath {
		oa, oka := dpOrder[va]
		ob, okb := dpOrder[vb]
		switch {
		case oka && okb:
			return oa < ob
		case oka:
			return true
		case okb:
			return false
		}
	}
	vs := report.SortValues(k, []string{va, vb})
	return vs[0] == va
}

// sortKeys orders label keys for display like the rows: test, flows, mtu,
// scenario, rules, path, datapath, then the rest alphabetically.
func sortKeys(keys []string) { report.SortKeysBy(rowKeyOrder, keys) }

// hostNotes compares each input's machine with the first one's.
func hostNotes(inputs []Input) []string {
	var notes []string
	base := inputs[0].Set.Host
	for _, in := range inputs {
		if in.Set.Interrupted {
			notes = append(notes, fmt.Sprintf("%s is from an interrupted run: cells it lacks were not measured.", in.Name))
		}
	}
	for _, in := range inputs[1:] {
		h := in.Set.Host
		var diffs []string
		if h.CPUModel != base.CPUModel {
			diffs = append(diffs, fmt.Sprintf("CPU %q vs %q", base.CPUModel, h.CPUModel))
		}
		if h.Cores != base.Cores {
			diffs = append(diffs, fmt.Sprintf("%d vs %d cores", base.Cores, h.Cores))
		}
		if h.Kernel != base.Kernel {
			diffs = append(diffs, fmt.Sprintf("kernel %s vs %s", base.Kernel, h.Kernel))
		}
		if len(diffs) > 0 {
			notes = append(notes, fmt.Sprintf("%s and %s ran on different machines (%s): their differences are not the datapath's alone.",
				inputs[0].Name, in.Name, strings.Join(diffs, ", ")))
		}
	}
	return notes
}
