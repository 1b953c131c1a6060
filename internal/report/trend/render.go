package trend

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
)

// metricGroups returns the metrics in order of first appearance and their
// series.
func (t *Trend) metricGroups() ([]string, map[string][]*Series) {
	var order []string
	by := map[string][]*Series{}
	for _, s := range t.Series {
		if _, ok := by[s.Metric]; !ok {
			order = append(order, s.Metric)
		}
		by[s.Metric] = append(by[s.Metric], s)
	}
	return order, by
}

func (t *Trend) subtitle() string {
	s := fmt.Sprintf("%d points", len(t.Points))
	if span := t.Span(); span != "" {
		s += " (" + span + ")"
	}
	s += fmt.Sprintf(", %d series, %d flagged change points (%d regressions)", len(t.Series), len(t.Changes()), t.Regressions())
	return s
}

// Method describes the detection and its parameters in one paragraph.
func (t *Trend) Method() string {
	o := t.Options
	match := "all labels"
	if len(o.Match) > 0 {
		match = "the labels " + strings.Join(o.Match, ", ")
	}
	return fmt.Sprintf("Runs are matched across points on %s. Change points: E-divisive means (Matteson & James 2014) on each series' per-point medians, "+
		"binary segmentation with a permutation test (%d permutations, seed %d, α = %g); a change point is flagged when the medians of the segments "+
		"on either side differ by at least %s. Before and after are the medians of the segments' medians; p is a Mann–Whitney U test "+
		"on the pooled repeats of the two segments. See docs/trends.md.",
		match, o.Permutations, o.Seed, o.Alpha, strings.TrimSuffix(fmt.Sprintf("%.1f", 100*o.MinShift), ".0")+" %")
}

func (t *Trend) between(c Change) string {
	from := "(start)"
	if c.Index > 0 {
		from = t.Points[c.Index-1].Name
	}
	return from + " → " + t.Points[c.Index].Name
}

func directionText(b int) string {
	switch {
	case b > 0:
		return "improvement"
	case b < 0:
		return "regression"
	}
	return "change"
}

// shiftRows is the table of flagged shifts, one row per change.
func (t *Trend) shiftRows() (header []string, rows [][]string, classes []string) {
	header = []string{"cell", "metric", "change point", "before", "after", "change", "direction", "p (Mann–Whitney)", "p (permutation)"}
	for _, c := range t.Changes() {
		d := "—"
		if !math.IsNaN(c.DeltaPct) {
			d = fmt.Sprintf("%+.1f %%", c.DeltaPct)
		}
		rows = append(rows, []string{report.CellName(c.Series.Labels), report.MetricTitle(c.Series.Metric), t.between(c.Change),
			report.Value(c.Series.Metric, c.Before), report.Value(c.Series.Metric, c.After), d, directionText(c.Better),
			report.PValue(c.P), report.PValue(c.PermP)})
		classes = append(classes, betterClass(c.Better))
	}
	return header, rows, classes
}

func (t *Trend) pointRows() (header []string, rows [][]string) {
	header = []string{"#", "point", "start (UTC)", "cnibench", "commit", "runs"}
	for i, p := range t.Points {
		start := "—"
		if !p.Set.Start.IsZero() {
			start = p.Set.Start.UTC().Format("2006-01-02 15:04")
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), p.Name, start, orDash(p.Set.Tool.Version), orDash(p.Set.Tool.Commit), fmt.Sprint(len(p.Set.Runs))})
	}
	return header, rows
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func metricHeading(m string) string {
	return fmt.Sprintf("%s (%s; %s)", report.MetricTitle(m), m, report.BetterText(m))
}

// HTML writes the trend as one self-contained page: inline CSS and SVG, no
// scripts, no network.
func (t *Trend) HTML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"cnibench\">\n")
	p("<title>cnibench trend</title>\n<style>\n%s</style>\n</head>\n<body>\n", css)
	p("<header>\n<h1>cnibench trend</h1>\n<p class=\"sub\">%s</p>\n</header>\n<main>\n", esc(t.subtitle()))

	p("<section id=\"shifts\">\n<h2>Flagged shifts</h2>\n")
	h, rows, classes := t.shiftRows()
	if len(rows) == 0 {
		p("<p class=\"none\">No change point flagged.</p>\n")
	} else {
		p("<div class=\"tw\"><table class=\"shifts\">\n<thead><tr>")
		for _, c := range h {
			p("<th>%s</th>", esc(c))
		}
		p("</tr></thead>\n<tbody>\n")
		for i, r := range rows {
			p("<tr class=\"%s\">", classes[i])
			for j, c := range r {
				cls := ""
				switch {
				case j == 5:
					cls = ` class="num ` + classes[i] + `"`
				case j == 6:
					cls = ` class="` + classes[i] + `"`
				case j >= 3:
					cls = ` class="num"`
				}
				p("<td%s>%s</td>", cls, esc(c))
			}
			p("</tr>\n")
		}
		p("</tbody>\n</table></div>\n")
	}
	p("<p>%s</p>\n</section>\n", esc(t.Method()))

	order, by := t.metricGroups()
	n := 0
	for _, m := range order {
		p("<section id=\"m-%s\">\n<h2>%s</h2>\n<div class=\"charts\">\n", esc(m), esc(metricHeading(m)))
		for _, s := range by[m] {
			p("<figure>\n%s</figure>\n", t.svg(s, chartID(n)))
			n++
		}
		p("</div>\n</section>\n")
	}

	p("<section id=\"points\">\n<h2>Points</h2>\n<div class=\"tw\"><table>\n<thead><tr>")
	ph, prows := t.pointRows()
	for _, c := range ph {
		p("<th>%s</th>", esc(c))
	}
	p("</tr></thead>\n<tbody>\n")
	for _, r := range prows {
		p("<tr>")
		for _, c := range r {
			p("<td>%s</td>", esc(c))
		}
		p("</tr>\n")
	}
	p("</tbody>\n</table></div>\n</section>\n")
	p("</main>\n<footer>Generated by cnibench from cnibench/results/v1 documents. Charts are inline SVG; this file needs no network access and no scripts.</footer>\n</body>\n</html>\n")
	return bw.Flush()
}

const css = `:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; margin: 0; color: #1b1b1b; background: #f6f7f9; line-height: 1.45; }
header { background: #fff; border-bottom: 1px solid #ddd; padding: 16px 28px; }
h1 { margin: 0 0 4px; font-size: 26px; }
h2 { margin: 28px 0 10px; font-size: 20px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { margin: 0 0 6px; color: #555; }
main { padding: 0 28px 28px; max-width: 1500px; }
p { max-width: 1100px; }
.tw { overflow-x: auto; }
table { border-collapse: collapse; background: #fff; margin: 8px 0 14px; font-size: 13px; }
th, td { border: 1px solid #d9d9d9; padding: 4px 9px; vertical-align: top; }
th { background: #eef0f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.regression { color: #C0392B; font-weight: 600; }
td.improvement { color: #1E8449; font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(620px, 1fr)); gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid #ddd; padding: 6px; }
svg.chart { width: 100%; height: auto; display: block; }
footer { color: #666; font-size: 12px; padding: 12px 28px 24px; }
`

func mdEsc(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func mdTable(w io.Writer, header []string, rows [][]string, right func(int) bool) {
	fmt.Fprintf(w, "| %s |\n|", strings.Join(mapEsc(header), " | "))
	for i := range header {
		if right(i) {
			fmt.Fprint(w, "---:|")
		} else {
			fmt.Fprint(w, "---|")
		}
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(mapEsc(r), " | "))
	}
	fmt.Fprintln(w)
}

func mapEsc(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = mdEsc(x)
	}
	return out
}

// Markdown writes the table of flagged shifts, then per metric a table of
// the series (one row per cell, one column per point; the first point
// after a flagged change is bold), then the points.
func (t *Trend) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# cnibench trend\n\n%s.\n\n## Flagged shifts\n\n", t.subtitle())
	h, rows, _ := t.shiftRows()
	if len(rows) == 0 {
		fmt.Fprint(bw, "No change point flagged.\n\n")
	} else {
		mdTable(bw, h, rows, func(i int) bool { return i >= 3 && i != 6 })
	}
	fmt.Fprintf(bw, "%s\n\n", t.Method())
	order, by := t.metricGroups()
	for _, m := range order {
		fmt.Fprintf(bw, "## %s\n\n", metricHeading(m))
		header := []string{"cell"}
		for _, p := range t.Points {
			header = append(header, p.Name)
		}
		var rows [][]string
		for _, s := range by[m] {
			changed := map[int]bool{}
			for _, c := range s.Changes {
				changed[c.Index] = true
			}
			row := []string{report.CellName(s.Labels)}
			for i, smp := range s.Samples {
				v := "—"
				if smp.Present {
					v = report.Median(m, smp.Summary)
				}
				if changed[i] {
					v = "**" + v + "**"
				}
				row = append(row, v)
			}
			rows = append(rows, row)
		}
		mdTable(bw, header, rows, func(i int) bool { return i > 0 })
	}
	fmt.Fprint(bw, "## Points\n\n")
	ph, prows := t.pointRows()
	mdTable(bw, ph, prows, func(i int) bool { return i == 0 || i == 5 })
	return bw.Flush()
}

// Output file names in the --out directory.
const (
	HTMLFile     = "trend.html"
	MarkdownFile = "trend.md"
)

// WriteFiles writes trend.html and trend.md into dir (created if needed),
// each through a temporary file renamed into place, and returns their paths.
func (t *Trend) WriteFiles(dir string) (htmlPath, mdPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	htmlPath, mdPath = filepath.Join(dir, HTMLFile), filepath.Join(dir, MarkdownFile)
	if err := report.WriteFileAtomic(htmlPath, t.HTML); err != nil {
		return "", "", err
	}
	if err := report.WriteFileAtomic(mdPath, t.Markdown); err != nil {
		return "", "", err
	}
	return htmlPath, mdPath, nil
}
