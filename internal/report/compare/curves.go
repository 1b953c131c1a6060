package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// Sweeps compared as curves. The runs of a sweep scenario (egress-filter
// against rules, services against the number of services: the shape its
// document carries, report.SweepShapeOf) are points of curves: their rows
// go into tables of their own, one per scenario and metric, grouped per
// curve (every label but the sweep's x) and ordered by x numerically. Each
// compared point also shows the ratio of the two sides with its 95 %
// interval and a Benjamini–Hochberg q-value over every point × metric of
// the comparison's sweeps; each curve ends with a summary of the points
// whose q is at most α. Comparisons without a sweep are unchanged.

// Sweep says which sweep a table's rows are points of.
type Sweep struct {
	Scenario string `json:"scenario"`
	// X is the label on the curve's x axis (rules); XText what it counts.
	X     string `json:"x"`
	XText string `json:"x_text"`
	// Series is the label of the scenario's lines (mechanism); Baseline
	// its value with nothing loaded (none), whose curve comes first.
	Series   string `json:"series"`
	Variant  string `json:"variant,omitempty"`
	Baseline string `json:"baseline,omitempty"`
	// titles are the scenario's own metric titles.
	titles map[string]string
}

// Curve summarises one curve of a sweep table for one compared column:
// the x values of the points compared, and of those whose change is
// significant after the Benjamini–Hochberg adjustment (q ≤ Alpha), in
// each direction; points measured on one side only.
type Curve struct {
	// Labels are the curve's labels that vary among the table's curves.
	Labels map[string]string
	// Column indexes the row's Cells.
	Column                 int
	Compared               []string
	Worse, Better, Changed []string
	OneSide                []string
	Alpha                  float64
}

// sweepsOf are the sweep shapes of the inputs' scenarios (the first input
// that draws a scenario as a sweep gives its shape).
func sweepsOf(inputs []Input) map[string]result.ScenarioShape {
	out := map[string]result.ScenarioShape{}
	for _, in := range inputs {
		for i := range in.Set.Runs {
			scen := in.Set.Runs[i].Labels[report.LabelScenario]
			if _, done := out[scen]; done || scen == "" {
				continue
			}
			if sh, ok := report.SweepShapeOf(in.Set, scen); ok {
				out[scen] = sh
			}
		}
	}
	return out
}

// curveSweeps keeps the sweeps whose compared points make curves: the
// compared label is not the sweep's x (--by rules compares sizes against
// one size, point by point, as any other label), and the pairs span at
// least two values of x (--where rules=1000 picks one point: a table
// row, not a curve). The others are compared as before sweeps were
// curves.
func curveSweeps(sw map[string]result.ScenarioShape, pairs []pair, mode Mode) map[string]result.ScenarioShape {
	xs := map[string]map[string]bool{}
	for _, p := range pairs {
		sh := sweepOf(sw, p.labels)
		if sh == nil {
			continue
		}
		scen := p.labels[report.LabelScenario]
		if xs[scen] == nil {
			xs[scen] = map[string]bool{}
		}
		xs[scen][p.labels[sh.X]] = true
	}
	out := map[string]result.ScenarioShape{}
	for scen, sh := range sw {
		if slices.Contains(strings.Split(string(mode), ","), sh.Sweep.X) || len(xs[scen]) < 2 {
			continue
		}
		out[scen] = sh
	}
	return out
}

// sweepOf is the sweep the labels are a point of (nil: none).
func sweepOf(sw map[string]result.ScenarioShape, l map[string]string) *result.SweepShape {
	sh, ok := sw[l[report.LabelScenario]]
	if !ok || l[sh.Sweep.X] == "" {
		return nil
	}
	return sh.Sweep
}

// pointMetrics are the per-point metrics of the pair's sweep that its
// runs have, compared by default besides the cell's.
func pointMetrics(sw map[string]result.ScenarioShape, p pair) []string {
	sh := sweepOf(sw, p.labels)
	if sh == nil {
		return nil
	}
	var out []string
	for _, mt := range sh.PointMetrics {
		for _, r := range append([]*result.Run{p.base}, p.others...) {
			if r != nil && len(report.Values(r, mt)) > 0 {
				out = append(out, mt)
				break
			}
		}
	}
	return out
}

// splitSweeps takes the rows of sweep points out of each table into
// tables of their own, one per scenario and metric in order (after the
// other tables); a per-point metric keeps one row per point.
// With the default metrics (pointFirst) a sweep's per-point metrics come
// first, as in the report.
func splitSweeps(tables map[string]*Table, order []string, sw map[string]result.ScenarioShape, pointFirst bool) []*Table {
	byScen := map[string]map[string]*Table{}
	for _, mt := range order {
		t := tables[mt]
		if t == nil {
			continue
		}
		kept := t.Rows[:0]
		for _, row := range t.Rows {
			sh := sweepOf(sw, row.Labels)
			if sh == nil {
				kept = append(kept, row)
				continue
			}
			scen := row.Labels[report.LabelScenario]
			if byScen[scen] == nil {
				byScen[scen] = map[string]*Table{}
			}
			st := byScen[scen][mt]
			if st == nil {
				st = &Table{Metric: mt, Columns: t.Columns, Sweep: &Sweep{Scenario: scen, X: sh.X, XText: sh.XText,
					Series: sh.Series, Variant: sh.Variant, Baseline: sh.Baseline, titles: sw[scen].MetricTitles}}
				byScen[scen][mt] = st
			}
			st.Rows = append(st.Rows, row)
		}
		t.Rows = kept
		if len(kept) == 0 {
			delete(tables, mt)
		}
	}
	var out []*Table
	for _, scen := range report.SortValues(report.LabelScenario, slices.Sorted(maps.Keys(byScen))) {
		mts := order
		if pointFirst {
			pm := sw[scen].Sweep.PointMetrics
			mts = append(slices.Clone(pm), slices.DeleteFunc(slices.Clone(order), func(m string) bool { return slices.Contains(pm, m) })...)
		}
		for _, mt := range mts {
			if st := byScen[scen][mt]; st != nil {
				if slices.Contains(sw[scen].Sweep.PointMetrics, mt) {
					st.Rows = onePerPoint(st.Rows, st.Sweep)
				}
				out = append(out, st)
			}
		}
	}
	return out
}

// onePerPoint keeps, of the rows of a per-point metric, one per point (the
// row with the most repeats; the cells of a point share its values), its
// labels without the cell's: test, flows, path and rate, and any other
// that takes several values among the rows of one point (udp_handshake), a point
// being a value of the sweep's x, series and variant on one datapath and
// CNI.
func onePerPoint(rows []*Row, sw *Sweep) []*Row {
	point := func(l map[string]string) string {
		p := map[string]string{}
		for k, v := range l {
			if k == report.LabelScenario || k == sw.X || k == sw.Series || k == sw.Variant || k == report.LabelDatapath || k == labelCNI || strings.HasPrefix(k, cniPrefix) {
				p[k] = v
			}
		}
		return result.LabelKey(p)
	}
	seen := map[string]map[string]string{} // point -> label -> first value
	cell := map[string]bool{report.LabelTest: true, report.LabelFlows: true, report.LabelPath: true, report.LabelRate: true}
	for _, r := range rows {
		pk := point(r.Labels)
		if seen[pk] == nil {
			seen[pk] = map[string]string{}
			for k, v := range r.Labels {
				seen[pk][k] = v
			}
			continue
		}
		for k, v := range r.Labels {
			if first, ok := seen[pk][k]; !ok || first != v {
				cell[k] = true
			}
		}
		for k := range seen[pk] {
			if _, ok := r.Labels[k]; !ok {
				cell[k] = true
			}
		}
	}
	strip := func(l map[string]string) map[string]string {
		if l == nil {
			return nil
		}
		out := map[string]string{}
		for k, v := range l {
			if !cell[k] {
				out[k] = v
			}
		}
		return out
	}
	n := func(r *Row) int {
		s := r.Base.Summary.N
		for _, c := range r.Cells {
			s += c.Summary.N
		}
		return s
	}
	best := map[string]*Row{}
	var order []string
	for _, r := range rows {
		k := result.LabelKey(strip(r.Labels))
		if b, ok := best[k]; !ok {
			order = append(order, k)
			best[k] = r
		} else if n(r) > n(b) {
			best[k] = r
		}
	}
	var out []*Row
	for _, k := range order {
		r := *best[k]
		r.Labels, r.BaseLabels = strip(r.Labels), strip(r.BaseLabels)
		out = append(out, &r)
	}
	return out
}

// curveKey is a row's curve: its labels but the sweep's x.
func curveKey(l map[string]string, x string) string {
	c := make(map[string]string, len(l))
	for k, v := range l {
		if k != x {
			c[k] = v
		}
	}
	return result.LabelKey(c)
}

// sortCurveRows groups the rows per curve, the curves in the order the
// other tables' rows take (test, flows, …, datapath, then the other labels
// alphabetically), and orders each curve's points by x numerically.
func sortCurveRows(rows []*Row, sw *Sweep, dpOrder map[string]int) {
	x := sw.X
	var ks []string
	seen := map[string]bool{}
	for _, r := range rows {
		for k := range r.Labels {
			if k != x && !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	sortKeys(ks)
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].Labels, rows[j].Labels
		for _, k := range ks {
			if va, vb := a[k], b[k]; va != vb {
				if k == sw.Series && sw.Baseline != "" && (va == sw.Baseline || vb == sw.Baseline) {
					return va == sw.Baseline
				}
				return labelBefore(k, va, vb, dpOrder)
			}
		}
		xa, _ := strconv.ParseFloat(a[x], 64)
		xb, _ := strconv.ParseFloat(b[x], 64)
		return xa < xb
	})
}

// qValues adjusts, by Benjamini–Hochberg, the p-values of every row the
// comparison prints a p-value for — every compared cell × metric of every
// table, sweep points included — as one family (HasQ). Rows without a
// p-value ("?": no repeats, too few repeats for any verdict) are not in
// it: they cannot reject. A family of one has q = p.
func (r *Result) qValues() {
	var ps []float64
	var cells []*Cell
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			for j := range row.Cells {
				c := &row.Cells[j]
				if c.printsP(row.Base) {
					ps = append(ps, c.P)
					cells = append(cells, c)
				}
			}
		}
	}
	r.Tests = len(ps)
	for i, q := range stats.BenjaminiHochberg(ps) {
		cells[i].Q, cells[i].HasQ = q, true
	}
	for _, t := range r.Tables {
		if t.Sweep != nil {
			t.Curves = curvesOf(t)
		}
	}
}

// printsP tells whether the output shows the cell's p-value: both sides
// have repeats and there are enough of them for a verdict.
func (c *Cell) printsP(base Side) bool {
	return c.Compared && len(base.Values) > 0 && len(c.Values) > 0 && !c.TooFew && !math.IsNaN(c.P)
}

// curvesOf summarises each curve of a sweep table, per compared column.
func curvesOf(t *Table) []Curve {
	vary := curveVary(t)
	var out []Curve
	for j := range t.Columns[1:] {
		var cur *Curve
		prev := ""
		for _, row := range t.Rows {
			if k := curveKey(row.Labels, t.Sweep.X); cur == nil || k != prev {
				prev = k
				out = append(out, Curve{Labels: map[string]string{}, Column: j, Alpha: 0.05})
				cur = &out[len(out)-1]
				for _, v := range vary {
					cur.Labels[v] = row.Labels[v]
				}
			}
			if j >= len(row.Cells) {
				continue
			}
			c, x := row.Cells[j], row.Labels[t.Sweep.X]
			if c.Present != row.Base.Present {
				cur.OneSide = append(cur.OneSide, x)
			}
			if !c.HasQ {
				continue
			}
			cur.Compared = append(cur.Compared, x)
			if c.Alpha > 0 {
				cur.Alpha = c.Alpha
			}
			if c.Q > cur.Alpha || c.DeltaPct == 0 || math.IsNaN(c.DeltaPct) {
				continue
			}
			switch direction(t.Metric, c.DeltaPct) {
			case 1:
				cur.Better = append(cur.Better, x)
			case -1:
				cur.Worse = append(cur.Worse, x)
			default:
				cur.Changed = append(cur.Changed, x)
			}
		}
	}
	return out
}

// curveVary are the curve labels (all but x) that differ between the
// table's curves, in display order.
func curveVary(t *Table) []string {
	vary, _ := shownKeys(t)
	return slices.DeleteFunc(vary, func(k string) bool { return k == t.Sweep.X })
}

// Text is the curve's summary line: "mechanism=ipset: worse at 3 of 4
// points (q ≤ 0.05): rules=1000,10000,100000". It says nothing of N
// between or beyond the points.
func (c Curve) Text(x string) string {
	var name []string
	for _, k := range sortedLabelKeys(c.Labels) {
		name = append(name, k+"="+c.Labels[k])
	}
	head := strings.Join(name, " ")
	if head == "" {
		head = "the curve"
	}
	list := func(xs []string) string { return x + "=" + strings.Join(xs, ",") }
	var parts []string
	n := len(c.Compared)
	for _, d := range []struct {
		what string
		xs   []string
	}{{"worse", c.Worse}, {"better", c.Better}, {"changed", c.Changed}} {
		if len(d.xs) > 0 {
			parts = append(parts, fmt.Sprintf("%s at %d of %d points (q ≤ %.2g): %s", d.what, len(d.xs), n, c.Alpha, list(d.xs)))
		}
	}
	switch {
	case n == 0:
		parts = append(parts, "no point compared")
	case len(parts) == 0:
		parts = append(parts, fmt.Sprintf("no significant change at any of %d points (q ≤ %.2g)", n, c.Alpha))
	}
	if len(c.OneSide) > 0 {
		parts = append(parts, "measured on one side only: "+list(c.OneSide))
	}
	return head + ": " + strings.Join(parts, "; ")
}

func sortedLabelKeys(l map[string]string) []string {
	ks := slices.Sorted(maps.Keys(l))
	sortKeys(ks)
	return ks
}

// ratioText is a compared point's ratio with its 95 % interval:
// "×0.912 [0.897, 0.930]"; "—" without one.
func ratioText(c Cell) string {
	ch := c.Change
	if !c.Compared || math.IsNaN(ch.Ratio) {
		return "—"
	}
	if math.IsNaN(ch.Lo) || math.IsNaN(ch.Hi) {
		return "×" + sig3(ch.Ratio) + " [no interval]"
	}
	return "×" + sig3(ch.Ratio) + " [" + sig3(ch.Lo) + ", " + sig3(ch.Hi) + "]"
}

// sig3 renders v with three significant digits, without an exponent.
func sig3(v float64) string {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	d := max(0, 2-int(math.Floor(math.Log10(v))))
	return strconv.FormatFloat(v, 'f', d, 64)
}

// qText is a point's q-value ("q=0.012", "q<0.001"; "—" when untested).
func qText(c Cell) string {
	if !c.HasQ {
		return "—"
	}
	return "q" + strings.TrimPrefix(report.PValue(c.Q), "p")
}
