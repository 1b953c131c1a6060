package field

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	// Charts are inline SVG charts (HTML only; the tables beside them
	// carry their numbers).
	Charts []string
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
	sweeps, other := sweepSections(f)
	summary := summarySection(f)
	if len(other) > 0 {
		summary.Blocks = append(summary.Blocks, block{Para: "The runs also measured the scenarios " + strings.Join(other, ", ") +
			", which this report does not put side by side: each file's own report draws them (cnibench report FILE)."})
	}
	d.Sections = append(d.Sections, comparedSection(f), summary, securitySection(f), footprintSection(f), mtuSection(f))
	d.Sections = append(d.Sections, sweeps...)
	d.Sections = append(d.Sections, notMeasuredSection(f))
	return d
}

// summarySection is the graded summary: per path a table of entries ×
// tests, each cell its CNI's share of its own baseline, graded as the
// single-run report grades (report.SummaryGrades).
func summarySection(f *Field) section {
	s := section{ID: "summary", Title: "Graded summary"}
	tests := fieldTests(f)
	if len(tests) == 0 {
		s.Blocks = append(s.Blocks, block{Para: "No entry measured the suite's tests outside a scenario: nothing to grade against a node-to-node baseline."})
		return s
	}
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
