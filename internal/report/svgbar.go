package report

import "math"

// Bar charts: a bar per category and series, with its interval, on a linear
// or log y axis, and a reference line.

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
