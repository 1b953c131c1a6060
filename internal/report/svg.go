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

type bar struct {
	OK         bool
	V, Lo, Hi  float64
	Warn       bool
	SeriesName string
}

type barChart struct {
	ID, Kind   string
	Title      string
	Subtitle   string
	YLabel     string
	Categories []string
	Series     []string
	Vals       [][]bar // [category][series]
	// RefValue draws a dashed line (the baseline's median) when HasRef.
	RefValue float64
	HasRef   bool
	RefLabel string
	Note     string
	// LogY draws the y axis on a log scale when every value is positive
	// (latency percentiles: p50 stays visible beside p99.9).
	LogY bool
}

type point struct {
	X, V, Lo, Hi float64
	Warn         bool
}

type lineSeries struct {
	Name   string
	Color  string
	Dashed bool // the reference (baseline) series
	Dotted bool // a variant of another series (same colour), e.g. another traversal
	Pts    []point
}

type lineChart struct {
	ID, Kind string
	Title    string
	Subtitle string
	XLabel   string
	YLabel   string
	LogX     bool
	// AutoLogY draws the y axis on a log scale when every value is
	// positive and they span at least two decades (set-up times from
	// microseconds to seconds); the y label then says so.
	AutoLogY    bool
	XTicks      []float64
	XTickLabels []string
	Series      []lineSeries
	Note        string
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

// dashAttr is a line series' stroke-dasharray attribute ("" when solid).
func dashAttr(s lineSeries) string {
	switch {
	case s.Dashed:
		return ` stroke-dasharray="7 4"`
	case s.Dotted:
		return ` stroke-dasharray="2 3"`
	}
	return ""
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

func (c *barChart) points() int {
	n := 0
	for _, cat := range c.Vals {
		for _, b := range cat {
			if b.OK {
				n++
			}
		}
	}
	return n
}

// svg renders the bar chart.
func (c *barChart) svg() string {
	var w svgWriter
	const left, right = 78.0, chartW - 16.0
	top := 70.0
	maxLabel := 0.0
	for _, cat := range c.Categories {
		maxLabel = math.Max(maxLabel, textWidth(cat, 12))
	}
	catW := (right - left) / float64(max(1, len(c.Categories)))
	rotate := maxLabel > catW-6
	bottomMargin := 52.0
	if rotate {
		bottomMargin = 30 + maxLabel*0.55
	}
	noteLines := wrapText(c.Note, "; ", chartW-24, 11)
	if c.Note != "" {
		bottomMargin += 18 + 14*float64(len(noteLines)-1)
	}
	h := chartH
	bottom := float64(h) - bottomMargin
	if bottom-top < 200 {
		h += int(200 - (bottom - top))
		bottom = float64(h) - bottomMargin
	}
	w.open(c.ID, c.Kind, c.Title, c.Subtitle, h, c.points())
	w.subtitle(c.Subtitle)
	var colors []string
	for i, s := range c.Series {
		colors = append(colors, seriesColor(s, i))
	}
	lx := w.legend(12, 60, c.Series, colors)
	if c.HasRef {
		w.p(`<line x1="%s" y1="56" x2="%s" y2="56" stroke="#333" stroke-width="1.2" stroke-dasharray="5 4"/>`, f(lx), f(lx+24))
		w.p(`<text x="%s" y="60" font-size="12" fill="#222">%s</text>`+"\n", f(lx+29), esc(c.RefLabel))
	}
	maxV := 0.0
	for _, cat := range c.Vals {
		for _, b := range cat {
			if b.OK {
				maxV = math.Max(maxV, math.Max(b.V, b.Hi))
			}
		}
	}
	if c.HasRef {
		maxV = math.Max(maxV, c.RefValue)
	}
	minV := math.Inf(1)
	for _, cat := range c.Vals {
		for _, b := range cat {
			if b.OK {
				minV = math.Min(minV, math.Min(b.V, b.Lo))
			}
		}
	}
	var yOf func(v float64) float64
	if c.LogY && minV > 0 && !math.IsInf(minV, 0) {
		yOf = w.logGrid(left, right, top, bottom, minV, maxV, c.YLabel+", log scale")
	} else {
		ymax, ticks := yAxis(maxV)
		w.yGrid(left, right, top, bottom, ymax, ticks, c.YLabel)
		yOf = func(v float64) float64 { return bottom - (bottom-top)*v/ymax }
	}
	maxBars := 1
	for _, cat := range c.Vals {
		n := 0
		for _, b := range cat {
			if b.OK {
				n++
			}
		}
		maxBars = max(maxBars, n)
	}
	barW := math.Min(44, catW*0.82/float64(maxBars))
	// Value labels above the bars when every one fits at 10 or 8.5 px.
	labelSize := 10.0
	for _, cat := range c.Vals {
		for _, b := range cat {
			if b.OK {
				for labelSize == 10 && textWidth(Num(b.V)+"*", labelSize) > barW+4 {
					labelSize = 8.5
				}
			}
		}
	}
	for _, cat := range c.Vals {
		for _, b := range cat {
			if b.OK && textWidth(Num(b.V)+"*", 8.5) > barW+2 {
				labelSize = 0
			}
		}
	}
	for ci, cat := range c.Categories {
		var present []int
		for si, b := range c.Vals[ci] {
			if b.OK {
				present = append(present, si)
			}
		}
		cx := left + catW*(float64(ci)+0.5)
		x0 := cx - barW*float64(len(present))/2
		for k, si := range present {
			b := c.Vals[ci][si]
			x := x0 + barW*float64(k)
			y := yOf(math.Max(0, b.V))
			w.p(`<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s</title></rect>`,
				f(x+1), f(y), f(barW-2), f(bottom-y), colors[si], esc(cat), esc(c.Series[si]), esc(Num(b.V)))
			w.errBar(x+barW/2, yOf(b.Lo), yOf(b.Hi), math.Min(5, barW/4))
			label := Num(b.V)
			if b.Warn {
				label += noteMark
			}
			if labelSize > 0 {
				w.p(`<text x="%s" y="%s" font-size="%s" fill="#222" text-anchor="middle">%s</text>`+"\n",
					f(x+barW/2), f(math.Min(y, yOf(b.Hi))-4), f(labelSize), esc(label))
			} else if b.Warn {
				w.p(`<text x="%s" y="%s" font-size="11" fill="#b35900" text-anchor="middle">%s</text>`+"\n",
					f(x+barW/2), f(math.Min(y, yOf(b.Hi))-4), noteMark)
			}
		}
		ly := bottom + 17
		if rotate {
			w.p(`<text x="%s" y="%s" font-size="12" fill="#222" text-anchor="end" transform="rotate(-35 %s %s)">%s</text>`+"\n",
				f(cx+4), f(ly), f(cx+4), f(ly), esc(cat))
		} else {
			w.p(`<text x="%s" y="%s" font-size="12" fill="#222" text-anchor="middle">%s</text>`+"\n", f(cx), f(ly), esc(cat))
		}
	}
	if c.HasRef {
		y := yOf(c.RefValue)
		w.p(`<line class="ref" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1" stroke-dasharray="5 4"/>`+"\n", f(left), f(y), f(right), f(y))
	}
	for i, line := range noteLines {
		w.p(`<text x="12" y="%d" font-size="11" fill="#555">%s</text>`+"\n", h-8-14*(len(noteLines)-1-i), esc(line))
	}
	w.p("</svg>\n")
	return w.b.String()
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

func (c *lineChart) points() int {
	n := 0
	for _, s := range c.Series {
		n += len(s.Pts)
	}
	return n
}

// svg renders the line chart.
func (c *lineChart) svg() string {
	var w svgWriter
	const left, right = 78.0, chartW - 24.0
	var names, colors []string
	for i, s := range c.Series {
		names = append(names, s.Name)
		col := s.Color
		if col == "" {
			col = palette[i%len(palette)]
		}
		colors = append(colors, col)
	}
	rows := legendRows(12, chartW-12, names)
	noteLines := wrapText(c.Note, "; ", chartW-24, 11)
	extra := 18*max(0, len(rows)-1) + 14*max(0, len(noteLines)-1)
	top := 70.0 + 18*float64(max(0, len(rows)-1))
	h := chartH + extra
	bottom := float64(h) - 56 - 14*float64(max(0, len(noteLines)-1))
	if c.Note != "" {
		bottom -= 18
	}
	maxV, minV := 0.0, math.Inf(1)
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Pts {
			maxV = math.Max(maxV, math.Max(p.V, p.Hi))
			minV = math.Min(minV, math.Min(p.V, p.Lo))
			xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
		}
	}
	logY := c.AutoLogY && minV > 0 && !math.IsInf(minV, 0) && maxV/minV >= 100
	ylabel := c.YLabel
	if logY {
		ylabel += ", log scale"
	}
	w.open(c.ID, c.Kind, c.Title, c.Subtitle, h, c.points())
	w.subtitle(c.Subtitle)
	for r, idx := range rows {
		x, y := 12.0, 60+18*float64(r)
		for _, i := range idx {
			// A line sample in the series' own dash pattern, so that
			// same-coloured variants tell apart.
			w.p(`<path d="M%s %sH%s" stroke="%s" stroke-width="3"%s/>`, f(x-1), f(y-4), f(x+12), colors[i], dashAttr(c.Series[i]))
			w.p(`<text x="%s" y="%s" font-size="12" fill="#222">%s</text>`+"\n", f(x+15), f(y), esc(names[i]))
			x += legendEntryWidth(names[i])
		}
	}
	for _, t := range c.XTicks {
		xmin, xmax = math.Min(xmin, t), math.Max(xmax, t)
	}
	tx := func(x float64) float64 {
		if c.LogX {
			return math.Log10(math.Max(x, 1e-300))
		}
		return x
	}
	lo, hi := tx(xmin), tx(xmax)
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || lo == hi {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	xOf := func(x float64) float64 { return left + (right-left)*(tx(x)-lo)/(hi-lo) }
	var yOf func(v float64) float64
	if logY {
		yOf = w.logGrid(left, right, top, bottom, minV, maxV, ylabel)
	} else {
		ymax, ticks := yAxis(maxV)
		w.yGrid(left, right, top, bottom, ymax, ticks, ylabel)
		yOf = func(v float64) float64 { return bottom - (bottom-top)*v/ymax }
	}
	for i, t := range c.XTicks {
		x := xOf(t)
		w.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444"/>`, f(x), f(bottom), f(x), f(bottom+5))
		w.p(`<text x="%s" y="%s" font-size="11" fill="#333" text-anchor="middle">%s</text>`+"\n", f(x), f(bottom+18), esc(c.XTickLabels[i]))
	}
	w.p(`<text x="%s" y="%s" font-size="12" fill="#222" text-anchor="middle">%s</text>`+"\n", f((left+right)/2), f(bottom+38), esc(c.XLabel))
	for si, s := range c.Series {
		var d strings.Builder
		for i, p := range s.Pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, f(xOf(p.X)), f(yOf(p.V)))
		}
		w.p(`<path class="line" d="%s" stroke="%s" stroke-width="2.2" fill="none"%s/>`+"\n", d.String(), colors[si], dashAttr(s))
		for _, p := range s.Pts {
			x, y := xOf(p.X), yOf(p.V)
			w.errBar(x, yOf(p.Lo), yOf(p.Hi), 4)
			w.p(`<circle class="point" cx="%s" cy="%s" r="4" fill="%s"><title>%s: %s</title></circle>`+"\n",
				f(x), f(y), colors[si], esc(s.Name), esc(Num(p.V)))
		}
	}
	for i, line := range noteLines {
		w.p(`<text x="12" y="%d" font-size="11" fill="#555">%s</text>`+"\n", h-8-14*(len(noteLines)-1-i), esc(line))
	}
	w.p("</svg>\n")
	return w.b.String()
}
