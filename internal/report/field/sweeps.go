package field

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// Sweep scenarios across the field: one curve per CNI configuration and
// series value (mechanism, implementation). The entries' runs of a
// scenario are put into one set whose datapath label is the entry's name,
// and drawn by the single-run report's sweep section (report.SweepView),
// so the charts and tables are the same.

// cellLabels are the labels a sweep's runs share by cell, not by entry.
var cellLabels = map[string]bool{
	report.LabelDatapath: true, report.LabelPath: true, report.LabelTest: true, report.LabelFlows: true,
	report.LabelMTU: true, report.LabelScenario: true, report.LabelRate: true,
	LabelCNI: true, LabelCNIMode: true, LabelCNIVersion: true,
	"cluster": true, "client_node": true, "server_node": true, "client_zone": true, "server_zone": true,
}

// sweepSections are the sections of every sweep scenario the entries
// measured, in the order first met; other are the scenarios drawn
// otherwise (each file's own report draws them).
func sweepSections(f *Field) (secs []section, other []string) {
	var scens []string
	seen := map[string]bool{}
	for _, e := range f.Measured {
		for _, r := range e.Set.Runs {
			if sc := r.Labels[report.LabelScenario]; sc != "" && !seen[sc] {
				seen[sc] = true
				scens = append(scens, sc)
			}
		}
	}
	for _, scen := range scens {
		var others []string
		set, entries := mergedSweep(f, scen, &others)
		if set == nil {
			other = append(other, scen)
			continue
		}
		var order []string
		for _, r := range set.Runs {
			if !slices.Contains(order, r.Labels[report.LabelDatapath]) {
				order = append(order, r.Labels[report.LabelDatapath])
			}
		}
		v, ok := report.SweepView(set, scen, report.SweepOptions{DatapathHeader: "CNI", DatapathOrder: order})
		if !ok {
			other = append(other, scen)
			continue
		}
		sh, _ := report.SweepShapeOf(set, scen)
		s := section{ID: v.ID, Title: v.Title + " across the CNIs"}
		s.Blocks = append(s.Blocks, block{Para: sweepLead(f, entries, scen, sh.Sweep)})
		for _, b := range v.Blocks {
			switch {
			case b.Para != "":
				s.Blocks = append(s.Blocks, block{Para: b.Para})
			case b.Charts != nil:
				s.Blocks = append(s.Blocks, block{Charts: b.Charts})
			case b.Table != nil:
				t := &table{Caption: b.Table.Caption, Header: b.Table.Header, Right: b.Table.Right}
				for _, r := range b.Table.Rows {
					var row []cell
					for _, c := range r {
						row = append(row, cell{Text: c})
					}
					t.Rows = append(t.Rows, row)
				}
				s.Blocks = append(s.Blocks, block{Table: t})
			}
		}
		if l := notMeasuredPoints(set, scen, sh.Sweep); len(l) > 0 {
			s.Blocks = append(s.Blocks, block{Para: "Points not measured, with the reason each run recorded:"}, block{List: l})
		}
		if len(others) > 0 {
			s.Blocks = append(s.Blocks, block{Para: "Datapaths of the runs that took no part in " + scen + ":"}, block{List: others})
		}
		secs = append(secs, s)
	}
	return secs, other
}

// mergedSweep is one set of the entries' runs and skipped points of
// scenario scen, each labelled with its entry's name as the datapath (the
// entry's name and datapath when an entry's runs of scen have several),
// with the first shape an entry's document gives the scenario; nil when
// no entry has a sweep shape for it. entries are the entries with runs.
//
// Skips of a datapath with no runs of scen go to others, one line each.
func mergedSweep(f *Field, scen string, others *[]string) (*result.Set, []*Entry) {
	set := &result.Set{Schema: result.SchemaResults}
	var entries []*Entry
	for _, e := range f.Measured {
		dps := map[string]bool{}
		var runs []result.Run
		for _, r := range e.Set.Runs {
			if r.Labels[report.LabelScenario] == scen {
				dps[r.Labels[report.LabelDatapath]] = true
				runs = append(runs, r)
			}
		}
		if len(runs) == 0 {
			continue
		}
		if _, ok := report.SweepShapeOf(e.Set, scen); !ok {
			continue
		}
		if set.Shape == nil {
			if sh := e.Set.Shape; sh != nil && sh.Scenario == scen && sh.Valid() == "" {
				c := *sh
				set.Shape = &c
			}
		}
		entries = append(entries, e)
		name := func(dp string) string {
			if len(dps) > 1 {
				return e.Name + " / " + dp
			}
			return e.Name
		}
		for _, r := range runs {
			r.Labels = relabel(r.Labels, name(r.Labels[report.LabelDatapath]))
			set.Runs = append(set.Runs, r)
		}
		for _, sk := range e.Set.Skipped {
			if sk.Labels[report.LabelScenario] != scen {
				continue
			}
			// A skip of a datapath that ran none of the scenario (the
			// host network's baseline) is no point of a curve: said
			// once per entry, datapath and reason.
			dp, has := sk.Labels[report.LabelDatapath]
			if has && !dps[dp] {
				if n := fmt.Sprintf("%s: datapath %s, every point: %s", e.Name, dp, sk.Reason); !contains(*others, n) {
					*others = append(*others, n)
				}
				continue
			}
			// A skip of no datapath in particular covers each of the
			// entry's, and no other entry's.
			names := []string{name(dp)}
			if !has {
				names = names[:0]
				for _, dp := range report.SortValues(report.LabelDatapath, slices.Sorted(maps.Keys(dps))) {
					names = append(names, name(dp))
				}
			}
			for _, n := range names {
				set.Skipped = append(set.Skipped, result.Skip{Labels: relabel(sk.Labels, n), Reason: sk.Reason})
			}
		}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	return set, entries
}

// relabel copies labels with datapath set to name.
func relabel(l map[string]string, name string) map[string]string {
	out := make(map[string]string, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	out[report.LabelDatapath] = name
	return out
}

// sweepLead says what the curves compare and what else differs between
// the entries: machines, suite settings and the runs' own labels.
func sweepLead(f *Field, entries []*Entry, scen string, sh *result.SweepShape) string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	p := fmt.Sprintf("One line per CNI configuration and %s (%s), each from its own run on its own cluster; "+
		"a point's interval is that run's repeats, so what changed on the machines between the runs is in no interval.",
		sh.Series, strings.Join(names, "; "))
	var without []string
	for _, e := range f.Measured {
		if !slices.Contains(entries, e) {
			without = append(without, e.Name)
		}
	}
	if len(without) > 0 {
		p += fmt.Sprintf(" Not run by %s.", strings.Join(without, ", "))
	}
	if len(entries) == 1 {
		return p
	}
	var differ []string
	if hostsDiffer(entries) {
		differ = append(differ, "the machines (see What is compared)")
	}
	labels := labelsDiffer(entries, scen, sh)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		differ = append(differ, "the label "+labels[k])
	}
	for _, d := range settingsDiffer(&Field{Measured: entries}) {
		if k, _, _ := strings.Cut(d, ":"); labels[k] == "" {
			differ = append(differ, "the suite setting "+d)
		}
	}
	if len(differ) == 0 {
		return p + " Besides the CNI, the runs differ in none of their labels and suite settings."
	}
	return p + " Besides the CNI, the runs differ in " + strings.Join(differ, "; ") + "."
}

func hostsDiffer(es []*Entry) bool {
	for _, e := range es[1:] {
		a, b := es[0].Set.Host, e.Set.Host
		if a.CPUModel != b.CPUModel || a.Cores != b.Cores || a.Kernel != b.Kernel {
			return true
		}
	}
	return false
}

// labelsDiffer are the labels of the entries' runs of scen, other than
// the shape's and the cells', whose values differ between entries, by
// label: "kube_proxy_mode: iptables for calico / flannel; nftables for
// cilium".
func labelsDiffer(es []*Entry, scen string, sh *result.SweepShape) map[string]string {
	vals := map[string]map[*Entry][]string{}
	for _, e := range es {
		for _, r := range e.Set.Runs {
			if r.Labels[report.LabelScenario] != scen {
				continue
			}
			for k, v := range r.Labels {
				if cellLabels[k] || k == sh.X || k == sh.Series || k == sh.Variant {
					continue
				}
				if vals[k] == nil {
					vals[k] = map[*Entry][]string{}
				}
				if !contains(vals[k][e], v) {
					vals[k][e] = append(vals[k][e], v)
				}
			}
		}
	}
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		var order []string
		by := map[string][]string{}
		for _, e := range es {
			v := orDash(strings.Join(report.SortValues(k, vals[k][e]), ", "))
			if _, ok := by[v]; !ok {
				order = append(order, v)
			}
			by[v] = append(by[v], e.Name)
		}
		if len(order) > 1 {
			var parts []string
			for _, v := range order {
				parts = append(parts, v+" for "+strings.Join(by[v], " / "))
			}
			out[k] = k + ": " + strings.Join(parts, "; ")
		}
	}
	return out
}

// notMeasuredPoints lists every point of scen that was skipped, too
// large, or whose every repeat failed, with the reason recorded:
// "calico vxlan, networkpolicy, 1000 rules: failed: prepare failed: …".
func notMeasuredPoints(set *result.Set, scen string, sh *result.SweepShape) []string {
	type point struct {
		dp, series, x, text string
	}
	var pts []point
	name := func(l map[string]string) point {
		p := point{dp: l[report.LabelDatapath], series: l[sh.Series], x: l[sh.X]}
		parts := []string{p.dp}
		if p.series != "" {
			parts = append(parts, p.series)
		}
		if v := l[sh.Variant]; v != "" && sh.Variant != "" {
			parts = append(parts, v)
		}
		if p.x != "" {
			parts = append(parts, p.x+" "+sh.XText)
		}
		if t := l[report.LabelTest]; t != "" {
			parts = append(parts, t)
		}
		p.text = strings.Join(parts, ", ")
		return p
	}
	for _, sk := range set.Skipped {
		p := name(sk.Labels)
		p.text += ": " + sk.Reason
		pts = append(pts, p)
	}
	for _, r := range set.Runs {
		if why := failure(r); why != "" && r.Labels[report.LabelScenario] == scen {
			p := name(r.Labels)
			p.text += ": failed: " + why
			pts = append(pts, p)
		}
	}
	dpOrder := map[string]int{}
	var order []map[string]string
	for _, r := range set.Runs {
		order = append(order, r.Labels)
	}
	for _, sk := range set.Skipped {
		order = append(order, sk.Labels)
	}
	for i, l := range order {
		if _, ok := dpOrder[l[report.LabelDatapath]]; !ok {
			dpOrder[l[report.LabelDatapath]] = i
		}
	}
	sort.SliceStable(pts, func(i, j int) bool {
		a, b := pts[i], pts[j]
		if a.dp != b.dp {
			return dpOrder[a.dp] < dpOrder[b.dp]
		}
		if a.series != b.series {
			return a.series < b.series
		}
		xa, _ := strconv.ParseFloat(a.x, 64)
		xb, _ := strconv.ParseFloat(b.x, 64)
		return xa < xb
	})
	var out []string
	for _, p := range pts {
		if !contains(out, p.text) {
			out = append(out, p.text)
		}
	}
	return out
}

// failure is the error of a run whose every repeat failed (the first
// repeat's; "" when a repeat succeeded).
func failure(r result.Run) string {
	if len(r.Repeats) == 0 {
		return ""
	}
	for _, rep := range r.Repeats {
		if rep.Error == "" {
			return ""
		}
	}
	return r.Repeats[0].Error
}
