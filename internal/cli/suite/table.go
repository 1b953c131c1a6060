package suite

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/pkg/result"
)

// Table prints the primary metric of every run, laid out for a terminal
// of report.TerminalWidth columns: one row per datapath and path, one
// column per test and flow count (split into parts when too wide). Under
// it: skipped datapaths and cells (once each), the warnings aggregated by
// kind, and why there is no graded summary when the baseline is missing.
func Table(w io.Writer, set *result.Set) error {
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
	for _, r := range set.Runs {
		l := r.Labels
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
	}
	var notes []string
	for _, sk := range set.Skipped {
		notes = append(notes, "skipped "+report.CellName(sk.Labels)+": "+strings.TrimPrefix(sk.Reason, "skipped: "))
	}
	hasBaseline := false
	for _, r := range set.Runs {
		hasBaseline = hasBaseline || r.Labels["datapath"] == report.BaselineDatapath
	}
	if !hasBaseline && len(set.Runs) > 0 {
		notes = append(notes, report.NoBaselineNote)
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
		default:
			out = append(out, k)
		}
	}
	report.SortLabelKeys(out)
	return out
}
