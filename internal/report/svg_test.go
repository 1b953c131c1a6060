package report

import (
	"reflect"
	"strings"
	"testing"
)

func TestLegendRows(t *testing.T) {
	names := []string{"ebpf-hash (every-packet)", "ebpf-lpm (every-packet)", "ipset (every-packet)",
		"ipset (new-connection)", "nftables (every-packet)", "none"}
	rows := legendRows(12, chartW-12, names)
	if len(rows) < 2 {
		t.Fatalf("rows %v: want the legend wrapped", rows)
	}
	var all []int
	for _, r := range rows {
		if len(r) == 0 {
			t.Fatalf("empty row in %v", rows)
		}
		w := 12.0
		for _, i := range r {
			w += legendEntryWidth(names[i])
		}
		if w > chartW-12 && len(r) > 1 {
			t.Errorf("row %v is %.0f wide, more than %d", r, w, chartW-12)
		}
		all = append(all, r...)
	}
	if !reflect.DeepEqual(all, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("entries %v, want each once in order", all)
	}
	if got := legendRows(12, chartW-12, []string{"a", "b"}); len(got) != 1 {
		t.Errorf("two short names: %v rows", got)
	}
	if got := legendRows(12, 50, []string{strings.Repeat("x", 40)}); len(got) != 1 {
		t.Errorf("one name wider than the chart: %v, want it alone on one row", got)
	}
}

func TestWrapText(t *testing.T) {
	note := "not drawn: iptables (every-packet) 1M: too large; iptables (new-connection) 1M: too large; * noisy or too few repeats, see Warnings"
	lines := wrapText(note, "; ", 300, 11)
	if len(lines) < 2 {
		t.Fatalf("%q: not wrapped", lines)
	}
	if got := strings.Join(lines, " "); got != note {
		t.Errorf("joined lines %q, want the note back", got)
	}
	if got := wrapText("", "; ", 300, 11); got != nil {
		t.Errorf("empty note: %q", got)
	}
}

func TestLogYAxis(t *testing.T) {
	lo, hi, ticks := logYAxis(6e-6, 12)
	if lo != -6 || hi != 2 || len(ticks) != 9 {
		t.Errorf("logYAxis(6e-6, 12) = %v, %v, %v", lo, hi, ticks)
	}
	if lo, hi, _ := logYAxis(10, 10); hi != lo+1 {
		t.Errorf("one value: %v..%v, want a decade", lo, hi)
	}
	for v, want := range map[float64]string{1e-6: "1e-06", 0.001: "0.001", 1: "1", 1000: "1000", 1e9: "1e+09"} {
		if got := logTick(v); got != want {
			t.Errorf("logTick(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestLineChartLogY: values spanning decades get a log y axis when asked;
// a zero keeps it linear.
func TestLineChartLogY(t *testing.T) {
	pts := func(vs ...float64) []point {
		var out []point
		for i, v := range vs {
			out = append(out, point{X: float64(10 * (i + 1)), V: v, Lo: v, Hi: v})
		}
		return out
	}
	c := &lineChart{ID: "x", Kind: "scenario", Title: "t", YLabel: "Set-up (s)", LogX: true, AutoLogY: true,
		Series: []lineSeries{{Name: "a", Pts: pts(1e-5, 1e-3, 2.5)}}}
	if s := c.svg(); !strings.Contains(s, "Set-up (s), log scale") || !strings.Contains(s, ">0.0001<") {
		t.Errorf("decades apart: no log axis in\n%s", s)
	}
	c.Series[0].Pts = pts(0, 1e-3, 2.5)
	if s := c.svg(); strings.Contains(s, "log scale") {
		t.Error("a zero value: log axis drawn")
	}
	c.Series[0].Pts, c.AutoLogY = pts(1e-5, 1e-3, 2.5), false
	if s := c.svg(); strings.Contains(s, "log scale") {
		t.Error("AutoLogY off: log axis drawn")
	}
}

// A clause wider than the chart is wrapped at its spaces, never cut.
func TestWrapTextLongClause(t *testing.T) {
	note := "not drawn: " + strings.Repeat("word ", 40) + "end; short"
	lines := wrapText(note, "; ", 300, 11)
	for _, l := range lines {
		if textWidth(l, 11) > 300 {
			t.Errorf("line %q wider than 300", l)
		}
	}
	if got := strings.Join(lines, " "); got != note {
		t.Errorf("joined lines %q, want the note back", got)
	}
}
