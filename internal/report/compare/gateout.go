package compare

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// Output of the regression gate: a verdict after the terminal tables, a
// pull-request comment in Markdown, JUnit XML.

// verdictKey identifies a gated cell and metric.
func verdictKey(labels map[string]string, metric, column string) string {
	return result.LabelKey(labels) + "\x00" + metric + "\x00" + column
}

// gateRow is a compared cell and metric with the gate's verdict.
type gateRow struct {
	labels            map[string]string
	metric, column    string
	base, new         Side
	cell              Cell
	fails             []Verdict
	unjudged          *Verdict
	change, lo, hi    float64
	intervalAvailable bool
	// sig: the change is significant as the gate decides (q ≤ alpha).
	sig bool
}

// gateRows lists every compared cell and metric in table order.
func (r *Result) gateRows() []gateRow {
	g := r.GateResult
	fails := map[string][]Verdict{}
	for _, v := range g.Failures {
		k := verdictKey(v.Labels, v.Metric, v.Column)
		fails[k] = append(fails[k], v)
	}
	unj := map[string]*Verdict{}
	for i := range g.Unjudged {
		v := &g.Unjudged[i]
		unj[verdictKey(v.Labels, v.Metric, v.Column)] = v
	}
	var out []gateRow
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			for i, c := range row.Cells {
				col := r.column(t, row, i)
				k := verdictKey(row.Labels, t.Metric, col)
				gr := gateRow{labels: row.Labels, metric: t.Metric, column: col, base: row.Base, new: c.Side, cell: c, fails: fails[k], unjudged: unj[k], sig: g.significant(c)}
				if ch, ok := g.intervals[k]; ok && ch.err == nil {
					gr.change, gr.lo, gr.hi, gr.intervalAvailable = ch.est, ch.lo, ch.hi, true
				}
				out = append(out, gr)
			}
		}
	}
	return out
}

func (gr gateRow) name(multi bool) string {
	n := report.CellName(gr.labels)
	if multi {
		n += " (" + gr.column + ")"
	}
	return n
}

func (gr gateRow) changeText() string {
	if !gr.intervalAvailable {
		return "—"
	}
	return Verdict{Change: gr.change, Lo: gr.lo, Hi: gr.hi, PP: IsShare(gr.metric)}.ChangeText()
}

func (gr gateRow) verdictText() string {
	switch {
	case len(gr.fails) > 0:
		var rs []string
		for _, f := range gr.fails {
			rs = append(rs, f.Rule)
		}
		return "FAIL (" + strings.Join(rs, ", ") + ")"
	case gr.unjudged != nil:
		return "no verdict"
	case !gr.sig:
		return "~"
	}
	switch direction(gr.metric, gr.cell.DeltaPct) {
	case 1:
		return "better"
	case -1:
		return "worse, within the rules"
	}
	return "changed"
}

// summary is the gate's one-line outcome.
func (g *GateResult) summary() string {
	state := "PASS"
	if g.Failed() {
		state = "FAIL"
	}
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	judged := g.Judged()
	s := fmt.Sprintf("%s: %s of %d judged past --fail-on %s, in %s of %d (%.0f %% intervals, q ≤ %g over %s)",
		state, plural(len(g.Failures), "metric"), judged, g.RuleText(), plural(g.FailedCells, "cell"), g.Cells, 100*g.Confidence, g.Alpha,
		plural(g.Family, "row")+" with a p-value")
	if n := len(g.Unjudged); n > 0 {
		s += fmt.Sprintf("; %s without a verdict", plural(n, "metric"))
	}
	return s
}

func (r *Result) multiColumn() bool { return len(r.Inputs) > 2 || r.Mode != ByFile }

// WriteGateText writes the gate's outcome after the terminal tables.
func (r *Result) WriteGateText(w io.Writer) error {
	g := r.GateResult
	if g == nil {
		return nil
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\nRegression gate: %s\n", g.summary())
	for _, n := range append(slices.Clone(r.HostNotes), r.ConfigNotes...) {
		fmt.Fprintf(bw, "  note: %s\n", n)
	}
	for _, v := range g.Failures {
		fmt.Fprintf(bw, "  %s · %s: %s %s\n", r.cellName(v), v.Metric, v.ChangeText(), v.Why)
	}
	for _, v := range g.Unjudged {
		fmt.Fprintf(bw, "  %s · %s: %s\n", r.cellName(v), v.Metric, v.Why)
	}
	return bw.Flush()
}

func (r *Result) cellName(v Verdict) string {
	return gateRow{labels: v.Labels, column: v.Column}.name(r.multiColumn())
}

// WriteGateMarkdown writes a pull-request comment: the outcome, the
// significant changes (failures first), and every compared cell folded.
func (r *Result) WriteGateMarkdown(w io.Writer) error {
	g := r.GateResult
	if g == nil {
		return r.WriteMarkdown(w)
	}
	bw := bufio.NewWriter(w)
	esc := strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "~", `\~`)
	state := "passed"
	if g.Failed() {
		state = "FAILED"
	}
	fmt.Fprintf(bw, "## cnibench regression gate: %s\n\n", state)
	fmt.Fprintf(bw, "%s\n\n", esc.Replace(g.summary()))
	fmt.Fprintf(bw, "Compared: %s\n\n", esc.Replace(strings.Join(r.Inputs, " → ")))
	for _, n := range append(slices.Clone(r.HostNotes), r.ConfigNotes...) {
		fmt.Fprintf(bw, "> **Note:** %s\n\n", esc.Replace(n))
	}
	rows := r.gateRows()
	var sig []gateRow
	for _, gr := range rows {
		if len(gr.fails) > 0 {
			sig = append(sig, gr)
		}
	}
	for _, gr := range rows {
		if len(gr.fails) == 0 && gr.sig {
			sig = append(sig, gr)
		}
	}
	if len(sig) == 0 {
		fmt.Fprint(bw, "No significant change.\n\n")
	} else {
		fmt.Fprintf(bw, "### Significant changes (%d)\n\n", len(sig))
		fmt.Fprintf(bw, "| cell | metric | old | new | change [%.0f %% interval] | p, q | verdict |\n|---|---|---:|---:|---:|---:|---|\n", 100*g.Confidence)
		for _, gr := range sig {
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s |\n",
				esc.Replace(gr.name(r.multiColumn())), esc.Replace(gr.metric),
				esc.Replace(plainSide(gr.metric, gr.base)), esc.Replace(plainSide(gr.metric, gr.new)),
				esc.Replace(gr.changeText()), esc.Replace(pqText(gr.cell)), esc.Replace(gr.verdictText()))
		}
		fmt.Fprintln(bw)
	}
	if len(g.Unjudged) > 0 {
		fmt.Fprintf(bw, "<details><summary>Without a verdict (%d)</summary>\n\n", len(g.Unjudged))
		for _, v := range g.Unjudged {
			fmt.Fprintf(bw, "- %s · %s: %s\n", esc.Replace(r.cellName(v)), esc.Replace(v.Metric), esc.Replace(v.Why))
		}
		fmt.Fprint(bw, "\n</details>\n\n")
	}
	fmt.Fprintf(bw, "<details><summary>All compared cells (%d)</summary>\n\n", len(rows))
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := r.WriteMarkdown(bw); err != nil {
		return err
	}
	fmt.Fprint(bw, "</details>\n")
	return bw.Flush()
}

// JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per compared cell: failed when a metric
// of it is past a rule, skipped when no metric of it could be judged.
func (r *Result) WriteJUnit(w io.Writer) error {
	g := r.GateResult
	if g == nil {
		return fmt.Errorf("JUnit output needs the gate (--fail-on)")
	}
	type tc struct {
		gr    []gateRow
		class string
		name  string
	}
	var order []string
	cases := map[string]*tc{}
	for _, gr := range r.gateRows() {
		k := result.LabelKey(gr.labels) + "\x00" + gr.column
		c := cases[k]
		if c == nil {
			class := "cnibench"
			if t := gr.labels[report.LabelTest]; t != "" {
				class += "." + t
			}
			c = &tc{class: class, name: gr.name(r.multiColumn())}
			cases[k] = c
			order = append(order, k)
		}
		c.gr = append(c.gr, gr)
	}
	suite := junitSuite{
		Name: "cnibench compare " + strings.Join(r.Inputs, " → "),
		Properties: []junitProperty{
			{"fail_on", g.RuleText()}, {"alpha", fmt.Sprint(g.Alpha)}, {"outcome", g.summary()},
		},
	}
	for _, k := range order {
		c := cases[k]
		jc := junitCase{Classname: c.class, Name: c.name}
		var out, failMsgs, failText []string
		judged := false
		for _, gr := range c.gr {
			out = append(out, fmt.Sprintf("%s: %s → %s: %s (%s) %s", gr.metric,
				plainSide(gr.metric, gr.base), plainSide(gr.metric, gr.new),
				gr.changeText(), pqText(gr.cell), gr.verdictText()))
			if gr.unjudged == nil && gr.cell.Compared {
				judged = true
			}
			for _, f := range gr.fails {
				failMsgs = append(failMsgs, fmt.Sprintf("%s %s", gr.metric, f.ChangeText()))
				failText = append(failText, gr.metric+": "+f.ChangeText()+" "+f.Why)
			}
		}
		jc.SystemOut = strings.Join(out, "\n")
		switch {
		case len(failMsgs) > 0:
			jc.Failure = &junitMessage{Message: strings.Join(failMsgs, "; "), Type: "regression", Text: strings.Join(failText, "\n")}
			suite.Failures++
		case !judged:
			why := "no compared metric"
			for _, gr := range c.gr {
				if gr.unjudged != nil {
					why = gr.unjudged.Why
					break
				}
			}
			jc.Skipped = &junitMessage{Message: why}
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, jc)
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "cnibench", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// plainSide is a side's median ± interval without footnote marks.
func plainSide(metric string, s Side) string {
	if !s.Present {
		return "—"
	}
	return report.Median(metric, s.Summary)
}
