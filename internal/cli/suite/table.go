package suitecmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// Table prints the primary metric of every run, laid out for a terminal
// of report.TerminalWidth columns: one row per datapath and path, one
// column per test and flow count (split into parts when too wide). Under
// it: skipped datapaths and cells (once each), the warnings aggregated by
// kind, and why there is no graded summary when the baseline is missing.
func Table(w io.Writer, set *result.Set) error {
	// How busy the host was comes before any figure.
	if n := report.InterferenceNote(set); n != "" {
		if _, err := fmt.Fprintf(w, "%s\n\n", report.Wrap(n, report.TerminalWidth, 2)); err != nil {
			return err
		}
	}
	type col struct {
		test  string
		flows int
		mtu   string
	}
	rows := map[string]map[col]string{}
	rowLabels := map[string][2]string{}
	var rowKeys []string
	cols := map[col]bool{}
	var cl []col
	var scen []result.Run
	for _, r := range set.Runs {
		l := r.Labels
		if isScenarioRun(l) {
			scen = append(scen, r)
			continue
		}
		path := l["path"]
		for _, k := range extraLabels(l) {
			path += ", " + k + "=" + l[k]
		}
		rk := l["datapath"] + "\x00" + path
		f, _ := strconv.Atoi(l["flows"])
		c := col{l["test"], f, l["mtu"]}
		if rows[rk] == nil {
			rows[rk] = map[col]string{}
			rowKeys = append(rowKeys, rk)
			rowLabels[rk] = [2]string{l["datapath"], path}
		}
		primary := result.TransPerSec
		if engine.IsStream(c.test) {
			primary = result.ThroughputBitsPerSec
		}
		sm, ok := report.Summary(&r, primary)
		if !ok {
			rows[rk][c] = "failed"
		} else {
			rows[rk][c] = report.Value(primary, sm.Median)
			if primary == result.TransPerSec {
				rows[rk][c] = strings.Replace(rows[rk][c], " trans/s", "/s", 1)
			}
			if stats.Notable(sm) {
				rows[rk][c] += " *"
			}
		}
		if !cols[c] {
			cols[c] = true
			cl = append(cl, c)
		}
	}
	testRank := map[string]int{}
	for i, t := range engine.Tests {
		testRank[t] = i
	}
	mtus := map[string]bool{}
	for _, c := range cl {
		mtus[c.mtu] = true
	}
	sortCols(cl, func(a, b col) bool {
		if a.mtu != b.mtu {
			return report.SortValues("mtu", []string{a.mtu, b.mtu})[0] == a.mtu
		}
		if a.test != b.test {
			return testRank[a.test] < testRank[b.test]
		}
		return a.flows < b.flows
	})
	t := report.TextTable{
		Caption: "Medians: throughput for stream tests, transactions per second (/s) otherwise",
		Header:  []string{"datapath", "path"},
		Right:   []bool{false, false},
		Keys:    2,
	}
	for _, c := range cl {
		h := fmt.Sprintf("%s ×%d", c.test, c.flows)
		if len(mtus) > 1 {
			h += " mtu " + c.mtu
		}
		t.Header = append(t.Header, h)
		t.Right = append(t.Right, true)
	}
	for _, rk := range rowKeys {
		lb := rowLabels[rk]
		row := []string{lb[0], lb[1]}
		for _, c := range cl {
			v := rows[rk][c]
			if v == "" {
				v = "—"
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	if len(t.Rows) > 0 {
		if err := t.WriteText(w, report.TerminalWidth, false); err != nil {
			return err
		}
		if err := gradedTables(w, set); err != nil {
			return err
		}
	}
	if err := scenarioTables(w, scen, len(t.Rows) > 0); err != nil {
		return err
	}
	var notes []string
	for _, sk := range set.Skipped {
		what, reason := "skipped", strings.TrimPrefix(sk.Reason, "skipped: ")
		for _, lead := range []string{"too large", "not run"} {
			if strings.HasPrefix(sk.Reason, lead+": ") {
				what, reason = lead, strings.TrimPrefix(sk.Reason, lead+": ")
			}
		}
		notes = append(notes, what+" "+report.CellName(sk.Labels)+": "+reason)
	}
	// Scenarios have no graded summary by design: the baseline note is
	// only for the matrix.
	hasBaseline := false
	for _, r := range set.Runs {
		hasBaseline = hasBaseline || r.Labels["datapath"] == report.BaselineDatapath
	}
	if !hasBaseline && len(set.Runs) > len(scen) {
		notes = append(notes, report.NoBaselineNote)
	}
	if len(set.Findings) > 0 {
		notes = append(notes, "checks (evidence in the report):")
		for _, f := range set.Findings {
			notes = append(notes, "  "+f.Check+": "+f.Verdict+": "+f.Summary)
		}
	}
	if wc := report.WarningCounts(set); len(wc) > 0 {
		notes = append(notes, "warnings by kind (values marked *; report.md lists every one):")
		for _, c := range wc {
			notes = append(notes, "  "+c)
		}
	}
	if set.Interrupted {
		notes = append(notes, "interrupted: the table covers what was measured before the interruption")
	}
	for _, n := range notes {
		indent := len(n) - len(strings.TrimLeft(n, " "))
		if _, err := fmt.Fprintln(w, strings.Repeat(" ", indent)+report.Wrap(strings.TrimLeft(n, " "), report.TerminalWidth-indent, indent+2)); err != nil {
			return err
		}
	}
	return nil
}

// gradedTables prints the report's graded summary: per container path,
// each datapath's share of the node-to-node baseline and its grade, two
// grades when the ratio's 95 % interval crosses a threshold, "not trusted"
// for a cell with too few clean repeats (report.GradeExplanation).
func gradedTables(w io.Writer, set *result.Set) error {
	cells := report.SummaryGrades(set)
	var paths []string
	for _, c := range cells {
		if indexOf(paths, c.Path) < 0 {
			paths = append(paths, c.Path)
		}
	}
	for _, path := range paths {
		var tests, dps []string
		text := map[[2]string]string{}
		for _, c := range cells {
			if c.Path != path {
				continue
			}
			if indexOf(tests, c.Test) < 0 {
				tests = append(tests, c.Test)
			}
			if indexOf(dps, c.Datapath) < 0 {
				dps = append(dps, c.Datapath)
			}
			text[[2]string{c.Datapath, c.Test}] = c.Text()
		}
		t := report.TextTable{
			Caption: "Grades: share of the node-to-node baseline, " + path + " path",
			Header:  append([]string{"datapath"}, tests...),
			Right:   make([]bool, len(tests)+1),
			Keys:    1,
		}
		for _, dp := range dps {
			row := []string{dp}
			for _, test := range tests {
				row = append(row, orDash(text[[2]string{dp, test}]))
			}
			t.Rows = append(t.Rows, row)
		}
		if err := t.WriteText(w, report.TerminalWidth, false); err != nil {
			return err
		}
	}
	return nil
}

// sortCols is a stable insertion sort (a handful of columns).
func sortCols[T any](xs []T, less func(a, b T) bool) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && less(xs[j], xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// extraLabels are the labels of a run other than the matrix's own
// (a scenario and its parameter), sorted.
func extraLabels(l map[string]string) []string {
	var out []string
	for k := range l {
		switch k {
		case "datapath", "path", "test", "flows", "mtu":
		case "backend", "cluster", "client_node", "server_node":
			// Where a cluster run ran: the header and the report say it.
		default:
			out = append(out, k)
		}
	}
	report.SortLabelKeys(out)
	return out
}

// isScenarioRun reports whether a run belongs to a scenario with its own
// parameters (egress-filter: mechanism, rules, traversal, rate), which
// gets its own table; a pure MTU sweep stays in the matrix table.
func isScenarioRun(l map[string]string) bool {
	if l["scenario"] == "" {
		return false
	}
	for _, k := range extraLabels(l) {
		if k != "scenario" {
			return true
		}
	}
	return false
}

// filterSetupSeconds is the egress-filter scenario's set-up metric, shown
// beside its points' cells.
const filterSetupSeconds = "filter_setup_seconds"

// scenarioKeyOrder is the order of a scenario's parameter columns.
var scenarioKeyOrder = []string{"datapath", "path", "flows", "mechanism", "traversal", "rules"}

// scenarioTables prints one table per scenario: one row per point
// (mechanism, traversal, rules, … — a column only for labels that vary),
// one column per test and rate, and the set-up time when it was measured.
func scenarioTables(w io.Writer, runs []result.Run, gap bool) error {
	byScen := map[string][]result.Run{}
	var names []string
	for _, r := range runs {
		n := r.Labels["scenario"]
		if byScen[n] == nil {
			names = append(names, n)
		}
		byScen[n] = append(byScen[n], r)
	}
	for _, name := range report.SortValues("scenario", names) {
		if gap {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		gap = true
		if err := scenarioTable(w, name, byScen[name]); err != nil {
			return err
		}
	}
	return nil
}

func scenarioTable(w io.Writer, name string, runs []result.Run) error {
	// Key labels: everything but scenario, test, rate and mtu; shown as a
	// column when it varies, in the caption when it does not.
	vals := map[string][]string{}
	for _, r := range runs {
		for k, v := range r.Labels {
			switch k {
			case "scenario", "test", "rate":
			default:
				vals[k] = append(vals[k], v)
			}
		}
	}
	var keys, fixed []string
	for k := range vals {
		if len(vals[k]) < len(runs) {
			// Some runs lack the label (apps: keep-alive is HTTP's
			// only): their rows show it as "—".
			vals[k] = append(vals[k], "")
		}
		vals[k] = report.SortValues(k, vals[k])
		if len(vals[k]) > 1 {
			keys = append(keys, k)
		} else {
			fixed = append(fixed, k)
		}
	}
	report.SortKeysBy(scenarioKeyOrder, keys)
	report.SortKeysBy(scenarioKeyOrder, fixed)
	if i := indexOf(vals["mechanism"], "none"); i > 0 {
		m := vals["mechanism"]
		vals["mechanism"] = append([]string{"none"}, append(m[:i:i], m[i+1:]...)...)
	}
	type col struct{ test, rate string }
	var cols []col
	seenCol := map[col]bool{}
	cells := map[string]map[col]string{}
	setup := map[string]string{}
	rowKey := func(l map[string]string) string {
		var parts []string
		for _, k := range keys {
			parts = append(parts, l[k])
		}
		return strings.Join(parts, "\x00")
	}
	for i := range runs {
		r := &runs[i]
		c := col{r.Labels["test"], r.Labels["rate"]}
		if !seenCol[c] {
			seenCol[c] = true
			cols = append(cols, c)
		}
		rk := rowKey(r.Labels)
		if cells[rk] == nil {
			cells[rk] = map[col]string{}
		}
		cells[rk][c] = primaryText(r)
		if sm, ok := report.Summary(r, filterSetupSeconds); ok && setup[rk] == "" {
			setup[rk] = report.Value(filterSetupSeconds, sm.Median)
		}
	}
	testRank := map[string]int{}
	for i, t := range engine.Tests {
		testRank[t] = i
	}
	sortCols(cols, func(a, b col) bool {
		if a.test != b.test {
			ra, oka := testRank[a.test]
			rb, okb := testRank[b.test]
			if oka != okb {
				return oka
			}
			if ra != rb {
				return ra < rb
			}
			return a.test < b.test
		}
		return a.rate == "" && b.rate != ""
	})
	var caption []string
	for _, k := range fixed {
		caption = append(caption, k+" "+vals[k][0])
	}
	t := report.TextTable{
		Caption: "Scenario " + name + " (" + strings.Join(caption, ", ") + "), medians: throughput for stream tests, transactions per second (/s) otherwise",
		Keys:    len(keys),
	}
	for _, k := range keys {
		t.Header = append(t.Header, k)
		t.Right = append(t.Right, k == "rules")
	}
	for _, c := range cols {
		h := c.test
		if c.rate != "" {
			h += " @" + c.rate
		}
		t.Header = append(t.Header, h)
		t.Right = append(t.Right, true)
	}
	hasSetup := len(setup) > 0
	if hasSetup {
		t.Header = append(t.Header, "set-up")
		t.Right = append(t.Right, true)
	}
	// Rows: every combination of the key values that was measured, in
	// display order.
	var combos [][]string
	var rec func(i int, prefix []string)
	rec = func(i int, prefix []string) {
		if i == len(keys) {
			combos = append(combos, append([]string(nil), prefix...))
			return
		}
		for _, v := range vals[keys[i]] {
			rec(i+1, append(prefix, v))
		}
	}
	rec(0, nil)
	for _, combo := range combos {
		rk := strings.Join(combo, "\x00")
		if cells[rk] == nil {
			continue
		}
		row := append([]string(nil), combo...)
		for i := range row {
			row[i] = orDash(row[i])
		}
		for _, c := range cols {
			v := cells[rk][c]
			if v == "" {
				v = "—"
			}
			row = append(row, v)
		}
		if hasSetup {
			row = append(row, orDash(setup[rk]))
		}
		t.Rows = append(t.Rows, row)
	}
	return t.WriteText(w, report.TerminalWidth, false)
}

// primaryText is a run's primary metric for the table ("failed" when no
// repeat measured it; "*" marks a notable summary).
func primaryText(r *result.Run) string {
	primary := result.TransPerSec
	if engine.IsStream(r.Labels["test"]) {
		primary = result.ThroughputBitsPerSec
	}
	sm, ok := report.Summary(r, primary)
	if !ok {
		return "failed"
	}
	v := report.Value(primary, sm.Median)
	if primary == result.TransPerSec {
		v = strings.Replace(v, " trans/s", "/s", 1)
	}
	if stats.Notable(sm) {
		v += " *"
	}
	return v
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}
