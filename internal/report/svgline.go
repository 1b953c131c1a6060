package report

import (
	"fmt"
	"math"
	"strings"
)

// Line charts: series of points over x (linear or log), with their
// intervals, on a linear or log y axis.

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
	// Marks are the series' points that were not measured (skipped, too
	// large, failed): a cross at their x on the axis, the reason its
	// tooltip.
	Marks []mark
}

// mark is a point of a series without a value, at X.
type mark struct {
	X      float64
	Reason string
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
		if len(s.Pts) == 0 {
			continue // only marks
		}
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
	// Crosses at the foot of the plot for the points not measured, in
	// the series' colour, stacked where several series miss one x.
	stack := map[float64]int{}
	for si, s := range c.Series {
		for _, m := range s.Marks {
			x, y := xOf(m.X), bottom-7-11*float64(stack[m.X])
			stack[m.X]++
			w.p(`<text class="mark" x="%s" y="%s" font-size="14" font-weight="bold" fill="%s" text-anchor="middle">×<title>%s: %s</title></text>`+"\n",
				f(x), f(y+5), colors[si], esc(s.Name), esc(m.Reason))
		}
	}
	for i, line := range noteLines {
		w.p(`<text x="12" y="%d" font-size="11" fill="#555">%s</text>`+"\n", h-8-14*(len(noteLines)-1-i), esc(line))
	}
	w.p("</svg>\n")
	return w.b.String()
}
