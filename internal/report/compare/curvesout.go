package compare

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/report"
)

// renderSweep lays out a sweep table as curves: the curve's labels on its
// first row only, x, both medians, the change with its p-value, the ratio
// with its 95 % interval and the q-value; each curve's summary under the
// table.
func (r *Result) renderSweep(t *Table) rendered {
	sw := t.Sweep
	vary := curveVary(t)
	_, constant := shownKeys(t)
	delete(constant, sw.X)
	title := tableTitle(t.Metric, constant)
	if mt := sw.titles[t.Metric]; mt != "" && report.MetricTitle(t.Metric) == t.Metric {
		title = t.Metric + ": " + mt + title[len(t.Metric):]
	}
	rt := rendered{Title: title + " — curves against " + sw.XText}
	for _, k := range vary {
		rt.Header = append(rt.Header, k)
		rt.Right = append(rt.Right, k == report.LabelFlows || k == report.LabelMTU)
	}
	rt.Header = append(rt.Header, sw.X, t.Columns[0])
	rt.Right = append(rt.Right, true, true)
	for _, c := range t.Columns[1:] {
		rt.Header = append(rt.Header, c, r.vsHeader(), "ratio [95 % CI]")
		rt.Right = append(rt.Right, true, false, false)
	}
	var fn footnotes
	prev := ""
	for _, row := range t.Rows {
		key := curveKey(row.Labels, sw.X)
		var cells []string
		for _, k := range vary {
			v, ok := row.Labels[k]
			switch {
			case key == prev:
				v = ""
			case !ok:
				v = "—"
			}
			cells = append(cells, v)
		}
		prev = key
		cells = append(cells, row.Labels[sw.X], sideText(t.Metric, row.Base, &fn))
		for _, c := range row.Cells {
			cells = append(cells, sideText(t.Metric, c.Side, &fn), deltaText(t.Metric, row.Base, c, &fn), ratioText(c))
		}
		rt.Rows = append(rt.Rows, cells)
	}
	rt.Footnotes = fn.list
	for _, c := range t.Curves {
		line := c.Text(sw.X)
		if len(t.Columns) > 2 {
			line = t.Columns[c.Column+1] + ": " + line
		}
		rt.After = append(rt.After, line)
	}
	return rt
}

// qNote says what the q-values are and what decides with them.
func qNote(tests int, alpha float64) string {
	if tests == 1 {
		return "q = p: the one row with a p-value is the whole family (Benjamini–Hochberg over one test)."
	}
	return fmt.Sprintf("q = the p-value adjusted (Benjamini–Hochberg 1995) over all %d rows with a p-value in this output "+
		"(every compared cell × metric), so that among the rows with q ≤ %.2g at most %.0f %% are expected to be false discoveries. "+
		"\"~\" and a signed change are each row's own test (p); a difference read across the family needs q ≤ %.2g.",
		tests, alpha, alpha*100, alpha)
}

// sweepNote says what the ratios and the curve summaries are.
func sweepNote() string {
	return "Sweeps are compared point by point: ratio = the compared side's ÷ the reference's (Hodges–Lehmann, " +
		"with the 95 % interval that inverts the U test); a curve's summary judges its points by q and counts only " +
		"its measured points: it says nothing of N between or beyond them."
}

// hasSweep tells whether a table compares a sweep's points.
func (r *Result) hasSweep() bool {
	for _, t := range r.Tables {
		if t.Sweep != nil {
			return true
		}
	}
	return false
}
