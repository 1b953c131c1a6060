package compare

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/stats"
)

// rendered is a format-neutral table: header, rows of cell texts,
// footnotes.
type rendered struct {
	Title     string
	Header    []string
	Right     []bool
	Rows      [][]string
	Footnotes []string
	// After are lines under the table (a sweep's curve summaries).
	After []string
}

type footnotes struct {
	list []string
	idx  map[string]int
}

// ref returns the superscript references for msgs, adding new footnotes.
func (f *footnotes) ref(msgs []string) string {
	var b strings.Builder
	for _, m := range msgs {
		if stats.IsRangeNote(m) {
			continue
		}
		if f.idx == nil {
			f.idx = map[string]int{}
		}
		i, ok := f.idx[m]
		if !ok {
			f.list = append(f.list, m)
			i = len(f.list)
			f.idx[m] = i
		}
		if b.Len() > 0 {
			b.WriteString("˒")
		}
		b.WriteString(superscript(i))
	}
	if b.Len() == 0 {
		return ""
	}
	return " " + b.String()
}

func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	ds := []rune(digits)
	var out []rune
	for _, c := range fmt.Sprint(n) {
		out = append(out, ds[c-'0'])
	}
	return string(out)
}

// shownKeys returns the label keys that vary across the table's rows
// (shown as columns) and the constant ones (shown in the title).
func shownKeys(t *Table) (vary []string, constant map[string]string) {
	all := map[string]bool{}
	for _, r := range t.Rows {
		for k := range r.Labels {
			all[k] = true
		}
	}
	constant = map[string]string{}
	for k := range all {
		first, same := "", true
		for i, r := range t.Rows {
			v, ok := r.Labels[k]
			if !ok {
				v = "—"
			}
			if i == 0 {
				first = v
			} else if v != first {
				same = false
			}
		}
		if same && len(t.Rows) > 1 {
			constant[k] = first
		} else {
			vary = append(vary, k)
		}
	}
	sortKeys(vary)
	return vary, constant
}

func (r *Result) render() []rendered {
	var out []rendered
	for _, t := range r.Tables {
		if t.Sweep != nil {
			out = append(out, r.renderSweep(t))
			continue
		}
		vary, constant := shownKeys(t)
		rt := rendered{Title: tableTitle(t.Metric, constant)}
		for _, k := range vary {
			rt.Header = append(rt.Header, k)
			rt.Right = append(rt.Right, k == report.LabelFlows || k == report.LabelMTU || k == report.LabelRules)
		}
		base := r.vsHeader()
		for i, c := range t.Columns {
			rt.Header = append(rt.Header, c)
			rt.Right = append(rt.Right, true)
			if i > 0 {
				rt.Header = append(rt.Header, base)
				rt.Right = append(rt.Right, false)
			}
		}
		var fn footnotes
		for _, row := range t.Rows {
			var cells []string
			for _, k := range vary {
				v, ok := row.Labels[k]
				if !ok {
					v = "—"
				}
				cells = append(cells, v)
			}
			cells = append(cells, sideText(t.Metric, row.Base, &fn))
			for _, c := range row.Cells {
				cells = append(cells, sideText(t.Metric, c.Side, &fn))
				cells = append(cells, deltaText(t.Metric, row.Base, c, &fn))
			}
			rt.Rows = append(rt.Rows, cells)
		}
		rt.Footnotes = fn.list
		out = append(out, rt)
	}
	return out
}

// tableTitle names the metric, its direction and the labels constant
// across the table's rows.
func tableTitle(metric string, constant map[string]string) string {
	title := fmt.Sprintf("%s: %s (%s)", metric, report.MetricTitle(metric), report.BetterText(metric))
	if report.MetricTitle(metric) == metric {
		title = fmt.Sprintf("%s (%s)", metric, report.BetterText(metric))
	}
	if len(constant) > 0 {
		ks := make([]string, 0, len(constant))
		for k := range constant {
			ks = append(ks, k)
		}
		sortKeys(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, k+"="+constant[k])
		}
		title += ", " + strings.Join(parts, " ")
	}
	return title
}

// vsHeader heads the change columns: "vs base", or "vs <baseline value>".
func (r *Result) vsHeader() string {
	if r.Mode != ByFile {
		return "vs " + r.Base
	}
	return "vs base"
}

func sideText(metric string, s Side, fn *footnotes) string {
	if !s.Present {
		return "—"
	}
	return report.Median(metric, s.Summary) + fn.ref(s.Summary.Warnings)
}

func deltaText(metric string, base Side, c Cell, fn *footnotes) string {
	if !c.Compared {
		return "—"
	}
	n := fmt.Sprintf("n=%d", base.Summary.N)
	if c.Summary.N != base.Summary.N {
		n = fmt.Sprintf("n=%d+%d", base.Summary.N, c.Summary.N)
	}
	pq := pqText(c)
	var d string
	switch {
	case len(base.Values) == 0 || len(c.Values) == 0:
		d = "? (no repeats to test)"
	case c.TooFew:
		d = fmt.Sprintf("? (%s: too few repeats for a verdict)", n)
	case !c.Significant:
		d = fmt.Sprintf("~ (%s %s)", pq, n)
	case IsShare(metric):
		d = fmt.Sprintf("%s (%s %s)", signedPP(c.DeltaPP), pq, n)
	default:
		d = fmt.Sprintf("%s (%s %s)", report.Pct(c.DeltaPct), pq, n)
	}
	return d + fn.ref(c.Warnings)
}

// notes are printed after all tables.
func (r *Result) notes() []string {
	alpha := 0.05
	small := map[int]bool{} // sample sizes below 6
	var tooFew []string     // "n vs m" pairs that can give no verdict
	seenTooFew := map[string]bool{}
	note := func(s Side) {
		if s.Present && s.Summary.N > 1 && s.Summary.N < 6 {
			small[s.Summary.N] = true
		}
	}
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			note(row.Base)
			for _, c := range row.Cells {
				if c.Compared && c.Alpha > 0 {
					alpha = c.Alpha
				}
				if c.TooFew {
					if k := fmt.Sprintf("%d/%d", row.Base.Summary.N, c.Summary.N); !seenTooFew[k] {
						seenTooFew[k] = true
						tooFew = append(tooFew, stats.TooFewMessage(row.Base.Summary.N, c.Summary.N, c.Alpha))
					}
				}
				note(c.Side)
			}
		}
	}
	notes := []string{fmt.Sprintf("Values are medians ± the larger distance to a bound of their 95 %% confidence interval; \"~\" means no significant difference (two-sided Mann–Whitney U test, p > %.2g).", alpha)}
	if len(small) > 0 {
		var parts []string
		for n := 5; n > 1; n-- {
			if small[n] {
				parts = append(parts, fmt.Sprintf("%.1f %% with %d repeats", 100*(1-2*math.Pow(0.5, float64(n))), n))
			}
		}
		notes = append(notes, "With fewer than 6 repeats no 95 % interval of the median exists; the range of the repeats is shown instead (confidence "+strings.Join(parts, ", ")+").")
	}
	for _, m := range tooFew {
		notes = append(notes, "No verdict is possible: "+m+" (cnibench run --repeat, suite --repeat).")
	}
	switch by := string(r.Mode); {
	case r.Mode == ByDatapath:
		notes = append(notes, fmt.Sprintf("Each datapath's run is matched with the %s run whose labels are equal except datapath, and except path when no run of %s has the same path (the node-to-node baseline has no cross-node or same-node runs).", r.Base, r.Base))
	case r.Mode != ByFile && fallbackIgnore[by] != nil:
		f := strings.Join(fallbackIgnore[by], ", ")
		notes = append(notes, fmt.Sprintf("Each %s's run is matched with the %s run whose labels are equal except %s, and except %s when no run of %s has the same %s.", by, r.Base, by, f, r.Base, f))
	case r.Mode != ByFile:
		notes = append(notes, fmt.Sprintf("Each %s's run is matched with the %s run whose labels are equal except %s.", by, r.Base, by))
	}
	if r.Mode != ByFile && len(r.Inputs) > 1 {
		s := fmt.Sprintf("The %d files' runs are pooled into one comparison, each value of %s from one file", len(r.Inputs), r.Mode)
		if len(r.Ignored) > 0 {
			s += "; labels ignored for matching besides " + string(r.Mode) + ": " + strings.Join(r.Ignored, "; ")
		}
		notes = append(notes, s+".")
	}
	for _, t := range r.Tables {
		if IsShare(t.Metric) {
			notes = append(notes, "CPU-profile shares (cpu_share_*, cpu_incl_*, % of all samples) change by percentage points (pp): NEW's median share minus OLD's, not a percentage of the share.")
			break
		}
	}
	if r.Tests > 0 {
		notes = append(notes, qNote(r.Tests, alpha))
	}
	if r.hasSweep() {
		notes = append(notes, sweepNote())
	}
	notes = append(notes, r.ProfileNotes...)
	notes = append(notes, r.HostNotes...)
	notes = append(notes, r.ConfigNotes...)
	if r.Mode != ByFile && r.Unmatched > 0 {
		notes = append(notes, fmt.Sprintf("%d run(s) have no %s counterpart (e.g. scenario runs %s did not take part in) and are not shown.", r.Unmatched, r.Base, r.Base))
	}
	return notes
}

// WriteText writes aligned plain-text tables, one per metric.
func (r *Result) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, t := range r.render() {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintln(bw, t.Title)
		width := make([]int, len(t.Header))
		for j, h := range t.Header {
			width[j] = runeLen(h)
		}
		for _, row := range t.Rows {
			for j, c := range row {
				width[j] = max(width[j], runeLen(c))
			}
		}
		line := func(cells []string) {
			var parts []string
			for j, c := range cells {
				pad := strings.Repeat(" ", width[j]-runeLen(c))
				if t.Right[j] {
					parts = append(parts, pad+c)
				} else {
					parts = append(parts, c+pad)
				}
			}
			fmt.Fprintln(bw, strings.TrimRight(strings.Join(parts, "  "), " "))
		}
		line(t.Header)
		for _, row := range t.Rows {
			line(row)
		}
		for j, n := range t.Footnotes {
			fmt.Fprintf(bw, "%s %s\n", superscript(j+1), n)
		}
		for _, l := range t.After {
			fmt.Fprintln(bw, l)
		}
	}
	fmt.Fprintln(bw)
	for _, n := range r.notes() {
		fmt.Fprintln(bw, n)
	}
	return bw.Flush()
}

func runeLen(s string) int { return len([]rune(s)) }

// WriteMarkdown writes GitHub-flavoured Markdown tables, one per metric.
func (r *Result) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	esc := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "~", `\~`)
	for _, t := range r.render() {
		fmt.Fprintf(bw, "### %s\n\n|", esc.Replace(t.Title))
		for _, h := range t.Header {
			fmt.Fprintf(bw, " %s |", esc.Replace(h))
		}
		fmt.Fprint(bw, "\n|")
		for j := range t.Header {
			if t.Right[j] {
				fmt.Fprint(bw, "---:|")
			} else {
				fmt.Fprint(bw, "---|")
			}
		}
		fmt.Fprintln(bw)
		for _, row := range t.Rows {
			fmt.Fprint(bw, "|")
			for _, c := range row {
				fmt.Fprintf(bw, " %s |", esc.Replace(c))
			}
			fmt.Fprintln(bw)
		}
		fmt.Fprintln(bw)
		for j, n := range t.Footnotes {
			fmt.Fprintf(bw, "%s %s  \n", superscript(j+1), esc.Replace(n))
		}
		if len(t.Footnotes) > 0 {
			fmt.Fprintln(bw)
		}
		for _, l := range t.After {
			fmt.Fprintf(bw, "- %s\n", esc.Replace(l))
		}
		if len(t.After) > 0 {
			fmt.Fprintln(bw)
		}
	}
	for _, n := range r.notes() {
		fmt.Fprintf(bw, "%s\n\n", esc.Replace(n))
	}
	return bw.Flush()
}
