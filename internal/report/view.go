package report

import (
	"github.com/cnibench/cnibench/pkg/result"
)

// A sweep section in a form other report views render in their own
// documents (internal/report/field: one curve per CNI), so that they draw
// the same charts and tables as the single-run report instead of a second
// implementation.

// View is one section: its anchor, title and blocks.
type View struct {
	ID, Title string
	Blocks    []ViewBlock
}

// ViewBlock is one of a paragraph, a table, or a row of charts.
type ViewBlock struct {
	Para  string
	Table *ViewTable
	// Charts are inline SVG documents (one <svg class="chart …"> each),
	// for HTML only; the tables beside them carry the same numbers.
	Charts []string
}

// ViewTable is a table of texts; Right right-aligns a column.
type ViewTable struct {
	Caption string
	Header  []string
	Right   []bool
	Rows    [][]string
}

// SweepOptions adjust a sweep view.
type SweepOptions struct {
	// DatapathHeader names what the datapath label stands for (the
	// field's CNI configurations): when set, every line is named by its
	// datapath too, even with one, and the tables' first column is
	// "<DatapathHeader>: <series header>".
	DatapathHeader string
	// DatapathOrder orders the datapaths' lines (the field's entries in
	// the order given); others follow, sorted.
	DatapathOrder []string
}

// SweepShapeOf is how scenario scen of set is drawn when it is a sweep:
// the document's own shape, else the shape registered for documents
// written before results carried one (when the runs carry its series
// label). ok is false for a scenario drawn otherwise, or not at all.
func SweepShapeOf(set *result.Set, scen string) (result.ScenarioShape, bool) {
	m := &model{set: set}
	sh, ok := m.shapeFor(scen, scenarioRuns(set, scen))
	if !ok || sh.Sweep == nil {
		return result.ScenarioShape{}, false
	}
	return sh, true
}

// SweepView renders scenario scen of set as the single-run report renders
// a sweep: every metric against N on a log axis (median with its 95 %
// interval), one line per series value (and datapath, when the runs have
// several), the tables beside the charts, and skipped, too-large or
// failed points named at their N. ok is false when scen is not drawn as a
// sweep (SweepShapeOf) or has no runs.
func SweepView(set *result.Set, scen string, o SweepOptions) (View, bool) {
	sh, ok := SweepShapeOf(set, scen)
	runs := scenarioRuns(set, scen)
	if !ok || len(runs) == 0 {
		return View{}, false
	}
	m := newModel(set)
	s := m.filterScenarioSectionWith(sh, scen, runs, o)
	v := View{ID: s.ID, Title: s.Title}
	for _, b := range s.Blocks {
		switch {
		case b.Para != "":
			v.Blocks = append(v.Blocks, ViewBlock{Para: b.Para})
		case b.Table != nil:
			t := &ViewTable{Caption: b.Table.Caption, Header: b.Table.Header, Right: b.Table.Right}
			for _, r := range b.Table.Rows {
				var row []string
				for _, c := range r {
					row = append(row, c.Text)
				}
				t.Rows = append(t.Rows, row)
			}
			v.Blocks = append(v.Blocks, ViewBlock{Table: t})
		case b.Charts != nil:
			var svgs []string
			for _, c := range b.Charts {
				svgs = append(svgs, c.svg())
			}
			v.Blocks = append(v.Blocks, ViewBlock{Charts: svgs})
		}
	}
	return v, true
}

// scenarioRuns are set's runs of scenario scen.
func scenarioRuns(set *result.Set, scen string) []*result.Run {
	var out []*result.Run
	for i := range set.Runs {
		if r := &set.Runs[i]; r.Labels[LabelScenario] == scen {
			out = append(out, r)
		}
	}
	return out
}
