package field

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// The field's document: sections of paragraphs, lists and tables, rendered
// alike in HTML, Markdown and text (render.go).
type document struct {
	Title, Subtitle string
	Sections        []section
}

type section struct {
	ID, Title string
	Blocks    []block
}

type block struct {
	Para  string
	List  []string
	Table *table
}

type table struct {
	Caption string
	Header  []string
	Right   []bool
	Rows    [][]cell
}

// cell is a table cell; Note is its longer explanation (the check's
// summary, why a cell is not graded): a footnote in text and Markdown, a
// tooltip in HTML.
type cell struct {
	Text, Class, Note string
}

// gradedPaths are the container paths the summary grades, in order; the
// service paths of a cluster's run are graded in its own report.
var gradedPaths = []struct{ Path, What string }{
	{"cross-node", "pod to pod across nodes"},
	{"same-node", "pod to pod on one node"},
}

func build(f *Field) *document {
	var names []string
	for _, e := range f.Measured {
		names = append(names, e.Name)
	}
	d := &document{Title: "cnibench field report"}
	d.Subtitle = fmt.Sprintf("%d CNI configurations side by side: %s", len(f.Measured), strings.Join(names, ", "))
	if len(f.NotMeasured) > 0 {
		d.Subtitle += fmt.Sprintf("; %d not measured", len(f.NotMeasured))
	}
	d.Sections = append(d.Sections, comparedSection(f), summarySection(f), securitySection(f),
		footprintSection(f), mtuSection(f), notMeasuredSection(f))
	return d
}

// comparedSection says what is compared and what else differs between the
// entries: machines first, then the runs, their settings and how busy
// their hosts were.
func comparedSection(f *Field) section {
	s := section{ID: "compared", Title: "What is compared"}
	if p := hostsPara(f); p != "" {
		s.Blocks = append(s.Blocks, block{Para: p})
	}
	interleaved := true
	for _, e := range f.Measured {
		interleaved = interleaved && e.Set.Config["interleaving"] != ""
	}
	how := "measured in the same run"
	if interleaved {
		how = "measured in the same run, its cells interleaved with the CNI's"
	}
	s.Blocks = append(s.Blocks, block{Para: fmt.Sprintf("Each CNI configuration below is one results file, one run on its own cluster. "+
		"Each is graded against its own cluster's node-to-node baseline (the host network), %s; the CNIs themselves were measured in separate runs, "+
		"one after another, so what changed on the machines between runs is in no interval: read a difference between two CNIs' grades "+
		"that their intervals do not clearly separate as none.", how)})
	var list []string
	for _, e := range f.Measured {
		item := fmt.Sprintf("%s: %s, from %s, measured %s", e.Name, e.ID, e.File, span(e.Set.Start, e.Set.End))
		if c := clusterOf(e.Set); c != "" {
			item += " on cluster " + c
		}
		if e.Set.Interrupted {
			item += " (INTERRUPTED: incomplete)"
		}
		list = append(list, item)
	}
	s.Blocks = append(s.Blocks, block{List: list})
	if p := settingsPara(f); p != "" {
		s.Blocks = append(s.Blocks, block{Para: p})
	}
	s.Blocks = append(s.Blocks, interferenceBlocks(f)...)
	return s
}

// hostsPara names the machines: when they differ (CPU model, cores,
// kernel) that comes first, as it weighs on every comparison below.
func hostsPara(f *Field) string {
	type host struct{ key, text string }
	var hosts []host
	distinct := map[string]bool{}
	for _, e := range f.Measured {
		h := e.Set.Host
		key := fmt.Sprintf("%s|%d|%s", h.CPUModel, h.Cores, h.Kernel)
		distinct[key] = true
		hosts = append(hosts, host{key, hostText(h)})
	}
	if len(distinct) > 1 {
		var parts []string
		for i, e := range f.Measured {
			parts = append(parts, e.Name+" on "+hosts[i].text)
		}
		return "The runs ran on different machines (CPU model, cores or kernel differ): " + strings.Join(parts, "; ") +
			". Each CNI is still graded against a baseline of its own machine, but a difference between CNIs may be the machines'."
	}
	names := map[string]bool{}
	for _, e := range f.Measured {
		names[e.Set.Host.Hostname] = true
	}
	what := "one machine"
	if len(names) > 1 {
		what = "machines of one kind"
	}
	all := fmt.Sprintf("All %d runs", len(f.Measured))
	if len(f.Measured) == 2 {
		all = "Both runs"
	}
	return fmt.Sprintf("%s ran on %s: %s (each file's host facts: on a cluster, the machine that drove the suite).",
		all, what, hostText(f.Measured[0].Set.Host))
}

func hostText(h result.Host) string {
	var parts []string
	if h.Hostname != "" {
		parts = append(parts, h.Hostname)
	}
	if h.CPUModel != "" {
		parts = append(parts, h.CPUModel)
	}
	if h.Cores > 0 {
		parts = append(parts, strconv.Itoa(h.Cores)+" cores")
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	if len(parts) == 0 {
		return "host facts not recorded"
	}
	return strings.Join(parts, ", ")
}

// span is "2026-11-25 02:32–02:40 UTC" (the end's date too when it differs).
func span(start, end time.Time) string {
	if start.IsZero() {
		return "at an unrecorded time"
	}
	s := start.UTC().Format("2006-01-02 15:04")
	if !end.IsZero() {
		if end.UTC().Format("2006-01-02") == start.UTC().Format("2006-01-02") {
			s += "–" + end.UTC().Format("15:04")
		} else {
			s += " – " + end.UTC().Format("2006-01-02 15:04")
		}
	}
	return s + " UTC"
}

func clusterOf(set *result.Set) string {
	if c := set.Config["cluster"]; c != "" {
		return c
	}
	for _, r := range set.Runs {
		if c := r.Labels["cluster"]; c != "" {
			return c
		}
	}
	return ""
}

// sharedSettings are the suite settings named when the runs share them.
var sharedSettings = []string{"profile", "repeat", "duration", "warmup", "flows", "tests", "mtus", "pin", "wire", "seed", "checks"}

// settingsPara says which suite settings the runs share and which differ.
func settingsPara(f *Field) string {
	keys := map[string]bool{}
	for _, e := range f.Measured {
		for k := range e.Set.Config {
			keys[k] = true
		}
	}
	var same, differ []string
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		switch k {
		case LabelCNI, LabelCNIMode, LabelCNIVersion, "cluster":
			continue // what is compared, or said above
		}
		vals := map[string]bool{}
		for _, e := range f.Measured {
			vals[e.Set.Config[k]] = true
		}
		if len(vals) > 1 {
			// grouped by value, in the order the runs are listed: a CNI's
			// name may hold commas of its own
			var order []string
			by := map[string][]string{}
			for _, e := range f.Measured {
				v := orDash(e.Set.Config[k])
				if _, ok := by[v]; !ok {
					order = append(order, v)
				}
				by[v] = append(by[v], e.Name)
			}
			var parts []string
			for _, v := range order {
				parts = append(parts, v+" for "+strings.Join(by[v], " / "))
			}
			differ = append(differ, "They differ in "+k+": "+strings.Join(parts, "; ")+".")
		}
	}
	for _, k := range sharedSettings {
		v := f.Measured[0].Set.Config[k]
		if v == "" || !keys[k] {
			continue
		}
		all := true
		for _, e := range f.Measured[1:] {
			all = all && e.Set.Config[k] == v
		}
		if all {
			same = append(same, k+" "+v)
		}
	}
	var out []string
	if len(same) > 0 {
		out = append(out, "The runs share these suite settings: "+strings.Join(same, ", ")+".")
	}
	out = append(out, differ...)
	return strings.Join(out, " ")
}

// interferenceBlocks give each busy run's interference line, and say
// which runs recorded none.
func interferenceBlocks(f *Field) []block {
	var busy, quiet, none []string
	for _, e := range f.Measured {
		in := e.Set.Interference
		switch {
		case in == nil:
			none = append(none, e.Name)
		case in.Busy > 0 || in.NotTrusted > 0:
			busy = append(busy, e.Name+": "+report.InterferenceNote(e.Set))
		default:
			quiet = append(quiet, e.Name)
		}
	}
	var out []block
	if len(busy) > 0 {
		out = append(out, block{Para: "Runs whose host was busy with other programs (docs/interference.md):"}, block{List: busy})
	}
	var parts []string
	if len(quiet) > 0 {
		parts = append(parts, "The host was quiet (no repeat past the busy threshold) in "+strings.Join(quiet, ", ")+".")
	}
	if len(none) == len(f.Measured) {
		parts = append(parts, "No run records how busy its host was (documents from before it was measured).")
	} else if len(none) > 0 {
		parts = append(parts, "How busy the host was is not recorded in "+strings.Join(none, ", ")+" (documents from before it was measured).")
	}
	if len(parts) > 0 {
		out = append(out, block{Para: strings.Join(parts, " ")})
	}
	return out
}

// summarySection is the graded summary: per path a table of entries ×
// tests, each cell its CNI's share of its own baseline, graded as the
// single-run report grades (report.SummaryGrades).
func summarySection(f *Field) section {
	s := section{ID: "summary", Title: "Graded summary"}
	tests := fieldTests(f)
	grades := map[*Entry][]report.GradedCell{}
	for _, e := range f.Measured {
		grades[e] = report.SummaryGrades(e.Set)
	}
	for _, gp := range gradedPaths {
		t := &table{Caption: fmt.Sprintf("Share of each CNI's own node-to-node baseline, %s path (%s)", gp.Path, gp.What),
			Header: append([]string{"CNI"}, tests...), Right: make([]bool, len(tests)+1)}
		for _, e := range f.Measured {
			dps := datapaths(e.Set)
			for _, dp := range dps {
				name := e.Name
				if len(dps) > 1 {
					name += " / " + dp
				}
				row := []cell{{Text: name}}
				for _, test := range tests {
					row = append(row, gradeCellOf(e.Set, grades[e], dp, gp.Path, test))
				}
				t.Rows = append(t.Rows, row)
			}
		}
		s.Blocks = append(s.Blocks, block{Table: t})
	}
	if other := otherPaths(f); len(other) > 0 {
		s.Blocks = append(s.Blocks, block{Para: "The runs also measured " + strings.Join(other, ", ") +
			": each file's own report grades them (cnibench report FILE)."})
	}
	s.Blocks = append(s.Blocks, block{Para: report.GradeExplanation() + " Here each row's baseline is its own run's."})
	if len(f.NotMeasured) > 0 {
		var names []string
		for _, e := range f.NotMeasured {
			names = append(names, e.Name)
		}
		s.Blocks = append(s.Blocks, block{Para: "Not measured, so not in these tables: " + strings.Join(names, ", ") + " (see Not measured)."})
	}
	return s
}

// gradeCellOf is one cell of the summary: the graded cell, or why there
// is none.
func gradeCellOf(set *result.Set, grades []report.GradedCell, dp, path, test string) cell {
	for _, g := range grades {
		if g.Datapath != dp || g.Path != path || g.Test != test {
			continue
		}
		if g.NotTrusted != "" {
			return cell{Text: "not trusted", Class: "g-none", Note: g.NotTrusted}
		}
		return cell{Text: g.Text(), Class: g.Class()}
	}
	runs := cellRuns(set, map[string]string{report.LabelDatapath: dp, report.LabelPath: path, report.LabelTest: test})
	if len(runs) == 0 {
		return cell{Text: "not measured", Class: "g-none"}
	}
	return cell{Text: "not graded", Class: "g-none", Note: notGradedWhy(set, runs[0], test)}
}

// notGradedWhy says why a measured cell has no grade: its run has no
// baseline run with the same labels but datapath and path (on a cluster,
// the same-node pods run on one node, the baseline between two).
func notGradedWhy(set *result.Set, r *result.Run, test string) string {
	base := cellRuns(set, map[string]string{report.LabelDatapath: report.BaselineDatapath, report.LabelTest: test})
	if len(base) == 0 {
		return fmt.Sprintf("not graded: the run has no node-to-node baseline run of %s", test)
	}
	b := base[0]
	for _, c := range base {
		if c.Labels[report.LabelFlows] == r.Labels[report.LabelFlows] {
			b = c
			break
		}
	}
	var diffs []string
	keys := map[string]bool{}
	for k := range r.Labels {
		keys[k] = true
	}
	for k := range b.Labels {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if report.IgnoredForBaseline(k) || r.Labels[k] == b.Labels[k] {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %s, the baseline's %s", k, orDash(r.Labels[k]), orDash(b.Labels[k])))
	}
	if len(diffs) == 0 {
		return "not graded: the baseline's run gives no ratio (a median missing or not positive)"
	}
	return "not graded: no baseline run with the same labels (" + strings.Join(diffs, "; ") + ")"
}

// cellRuns are the runs of set outside scenarios with the labels of match,
// ordered by their labels.
func cellRuns(set *result.Set, match map[string]string) []*result.Run {
	var out []*result.Run
	for i := range set.Runs {
		r := &set.Runs[i]
		if r.Labels[report.LabelScenario] != "" {
			continue
		}
		ok := true
		for k, v := range match {
			ok = ok && r.Labels[k] == v
		}
		if ok {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		fi, _ := strconv.Atoi(out[i].Labels[report.LabelFlows])
		fj, _ := strconv.Atoi(out[j].Labels[report.LabelFlows])
		if fi != fj {
			return fi < fj
		}
		return result.LabelKey(out[i].Labels) < result.LabelKey(out[j].Labels)
	})
	return out
}

// fieldTests are the tests any entry measured outside scenarios.
func fieldTests(f *Field) []string {
	var tests []string
	for _, e := range f.Measured {
		for _, r := range e.Set.Runs {
			if r.Labels[report.LabelScenario] == "" && r.Labels[report.LabelTest] != "" {
				tests = append(tests, r.Labels[report.LabelTest])
			}
		}
	}
	return report.SortValues(report.LabelTest, tests)
}

// datapaths are the entry's datapaths other than the baseline (on a
// cluster one: cni-<name>).
func datapaths(set *result.Set) []string {
	var dps []string
	for _, r := range set.Runs {
		if dp := r.Labels[report.LabelDatapath]; dp != report.BaselineDatapath && r.Labels[report.LabelScenario] == "" {
			dps = append(dps, dp)
		}
	}
	dps = report.SortValues(report.LabelDatapath, dps)
	if len(dps) == 0 {
		return []string{""}
	}
	return dps
}

// otherPaths are the container paths measured besides the graded ones.
func otherPaths(f *Field) []string {
	var paths []string
	for _, e := range f.Measured {
		for _, r := range e.Set.Runs {
			p := r.Labels[report.LabelPath]
			if p == "" || p == "node-to-node" || r.Labels[report.LabelScenario] != "" {
				continue
			}
			graded := false
			for _, gp := range gradedPaths {
				graded = graded || gp.Path == p
			}
			if !graded {
				paths = append(paths, p)
			}
		}
	}
	return report.SortValues(report.LabelPath, paths)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
