package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Charts are hand-written SVG: a few kilobytes each, no scripts, no
// external fonts, deterministic. Every chart is an <svg class="chart
// chart-KIND" id="…" data-points="N"> so tests can count them and check
// that none is empty.

const (
	chartW    = 720
	chartH    = 400
	fontStack = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif"
)

// Okabe–Ito colours (colour-blind safe).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999", "#F0E442", "#000000"}

var pathColors = map[string]string{"node-to-node": "#6b6b6b", "cross-node": "#0072B2", "same-node": "#E69F00"}

func seriesColor(name string, i int) string {
	if c, ok := pathColors[name]; ok {
		return c
	}
	return palette[i%len(palette)]
}

func esc(s string) string { return html.EscapeString(s) }

// f formats an SVG coordinate.
// SVGNum formats an SVG coordinate: one decimal at most, no "-0", 0 for
// NaN and infinities.
func SVGNum(v float64) string { return f(v) }

func f(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	s := fmt.Sprintf("%.1f", v)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		s = "0"
	}
	return s
}

// NiceStep rounds raw up to 1, 2, 2.5 or 5 × 10^k: a chart axis's tick step.
func NiceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// yAxis returns the axis maximum and the tick values from 0.
func yAxis(max float64) (top float64, ticks []float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		max = 1
	}
	step := NiceStep(max * 1.08 / 5)
	top = step * math.Ceil(max*1.08/step)
	for i := 0; float64(i)*step <= top*(1+1e-9); i++ {
		ticks = append(ticks, float64(i)*step)
	}
	return top, ticks
}

type svgWriter struct {
	b strings.Builder
}

func (w *svgWriter) p(format string, a ...any) { fmt.Fprintf(&w.b, format, a...) }

func (w *svgWriter) open(id, kind, title, desc string, h, points int) {
	w.p(`<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-%s" id="%s" data-points="%d" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-labelledby="%s-title" font-family="%s">`+"\n",
		kind, esc(id), points, chartW, h, chartW, h, esc(id), esc(fontStack))
	w.p(`<title id="%s-title">%s</title>`+"\n", esc(id), esc(title))
	if desc != "" {
		w.p("<desc>%s</desc>\n", esc(desc))
	}
	w.p(`<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, h)
	w.p(`<text x="12" y="22" font-size="15" font-weight="600" fill="#111">%s</text>`+"\n", esc(title))
}

func (w *svgWriter) subtitle(s string) {
	if s != "" {
		w.p(`<text x="12" y="40" font-size="12" fill="#555">%s</text>`+"\n", esc(s))
	}
}

// legend draws coloured squares with names at y, left to right from x,
// and returns where the next entry would go.
func (w *svgWriter) legend(x, y float64, names, colors []string) float64 {
	for i, n := range names {
		w.p(`<rect x="%s" y="%s" width="11" height="11" fill="%s"/>`, f(x), f(y-9), colors[i])
		w.p(`<text x="%s" y="%s" font-size="12" fill="#222">%s</text>`+"\n", f(x+15), f(y), esc(n))
		x += legendEntryWidth(n)
	}
	return x
}

func legendEntryWidth(name string) float64 { return 15 + textWidth(name, 12) + 16 }

// legendRows splits names into rows that fit between x0 and maxX.
func legendRows(x0, maxX float64, names []string) [][]int {
	var rows [][]int
	x := maxX // forces a first row
	for i, n := range names {
		wd := legendEntryWidth(n)
		if x+wd > maxX && (len(rows) == 0 || len(rows[len(rows)-1]) > 0) {
			rows = append(rows, nil)
			x = x0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], i)
		x += wd
	}
	return rows
}

// wrapText splits s at sep into lines no wider than width at size px (a
// part wider than width stands alone on its line).
func wrapText(s, sep string, width, size float64) []string {
	if s == "" {
		return nil
	}
	// Tokens with the separator that follows them: the parts between
	// seps, and a part wider than the line split at its spaces.
	type token struct{ text, after string }
	var toks []token
	parts := strings.Split(s, sep)
	for i, part := range parts {
		after := sep
		if i == len(parts)-1 {
			after = ""
		}
		if sep == " " || textWidth(part, size) <= width {
			toks = append(toks, token{part, after})
			continue
		}
		words := strings.Split(part, " ")
		for k, wd := range words {
			a := " "
			if k == len(words)-1 {
				a = after
			}
			toks = append(toks, token{wd, a})
		}
	}
	var lines []string
	cur, pending := "", ""
	for _, t := range toks {
		next := cur + pending + t.text
		if cur != "" && textWidth(next, size) > width {
			lines = append(lines, cur+strings.TrimRight(pending, " "))
			next = t.text
		}
		cur, pending = next, t.after
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// logYAxis returns the axis range in decades (lo, hi: powers of ten
// around [min, max]) and a tick at every power of ten between.
func logYAxis(min, max float64) (lo, hi float64, ticks []float64) {
	lo, hi = math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	if hi <= lo {
		hi = lo + 1
	}
	for e := lo; e <= hi; e++ {
		ticks = append(ticks, math.Pow(10, e))
	}
	return lo, hi, ticks
}

// logTick formats a power-of-ten tick (0.001, 1, 1000, 1e-06).
func logTick(v float64) string {
	if v >= 1e-4 && v < 1e7 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// textWidth estimates the rendered width of s at size px.
func textWidth(s string, size float64) float64 {
	return float64(len([]rune(s))) * size * 0.58
}

// yGrid draws horizontal grid lines, tick labels and the rotated y label.
func (w *svgWriter) yGrid(left, right, top, bottom, ymax float64, ticks []float64, ylabel string) {
	dec := 0
	if len(ticks) > 1 {
		step := ticks[1] - ticks[0]
		for dec < 6 && math.Abs(step*math.Pow(10, float64(dec))-math.Round(step*math.Pow(10, float64(dec)))) > 1e-6 {
			dec++
		}
	}
	for _, t := range ticks {
		y := bottom - (bottom-top)*t/ymax
		stroke := "#e3e3e3"
		if t == 0 {
			stroke = "#444"
		}
		w.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`, f(left), f(y), f(right), f(y), stroke)
		w.p(`<text x="%s" y="%s" font-size="11" fill="#333" text-anchor="end">%s</text>`+"\n", f(left-6), f(y+4), strconv.FormatFloat(t, 'f', dec, 64))
	}
	mid := (top + bottom) / 2
	w.p(`<text x="16" y="%s" font-size="12" fill="#222" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", f(mid), f(mid), esc(ylabel))
}

func (w *svgWriter) errBar(x, yLo, yHi, cap float64) {
	if math.Abs(yLo-yHi) < 0.5 {
		return
	}
	w.p(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="#111" stroke-width="1.2" fill="none"/>`,
		f(x), f(yLo), f(yHi), f(x-cap), f(yLo), f(x+cap), f(x-cap), f(yHi), f(x+cap))
}

// logGrid draws a log-scale y axis over [minV, maxV] (a grid line and a
// label at every power of ten) and returns the value-to-y mapping; values
// at or below zero sit at the axis's bottom.
func (w *svgWriter) logGrid(left, right, top, bottom, minV, maxV float64, ylabel string) func(v float64) float64 {
	dlo, dhi, ticks := logYAxis(minV, maxV)
	yOf := func(v float64) float64 {
		return bottom - (bottom-top)*(math.Log10(math.Max(v, math.Pow(10, dlo)))-dlo)/(dhi-dlo)
	}
	for _, t := range ticks {
		y := yOf(t)
		w.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3" stroke-width="1"/>`, f(left), f(y), f(right), f(y))
		w.p(`<text x="%s" y="%s" font-size="11" fill="#333" text-anchor="end">%s</text>`+"\n", f(left-6), f(y+4), logTick(t))
	}
	w.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444" stroke-width="1"/>`, f(left), f(bottom), f(right), f(bottom))
	mid := (top + bottom) / 2
	w.p(`<text x="16" y="%s" font-size="12" fill="#222" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", f(mid), f(mid), esc(ylabel))
	return yOf
}
