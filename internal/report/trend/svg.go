package trend

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
)

// The charts follow internal/report's conventions: hand-written inline
// SVG, deterministic, <svg class="chart chart-trend" id="…"
// data-points="N" data-changes="K">; each change point is a <g
// class="cp regression|improvement|neutral"> with its line and label.

const (
	chartW    = 720
	chartH    = 380
	fontStack = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif"
	left      = 72.0
	right     = chartW - 20.0
	top       = 70.0
	bottom    = chartH - 92.0
)

// Colours: Okabe–Ito blue for the series; regression red, improvement green.
var changeColors = map[string]string{"regression": "#C0392B", "improvement": "#1E8449", "neutral": "#555555"}

func esc(s string) string { return html.EscapeString(s) }

// f formats an SVG coordinate.
func f(v float64) string { return report.SVGNum(v) }

func betterClass(b int) string {
	switch {
	case b > 0:
		return "improvement"
	case b < 0:
		return "regression"
	}
	return "neutral"
}

// ChangeLabel is a change's short text: "+12.3 % (p=0.004)".
func ChangeLabel(c Change) string {
	d := "—"
	if !math.IsNaN(c.DeltaPct) {
		d = fmt.Sprintf("%+.1f %%", c.DeltaPct)
	}
	return d + " (" + report.PValue(c.P) + ")"
}

// chartID is the series' HTML id.
func chartID(i int) string { return "trend-" + strconv.Itoa(i+1) }

// svg draws series s: x the points in order, y the medians with their
// interval whiskers, the segments' medians dashed, change points as
// vertical lines with their labels.
func (t *Trend) svg(s *Series, id string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	n := len(t.Points)
	present := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, smp := range s.Samples {
		if !smp.Present {
			continue
		}
		present++
		lo = math.Min(lo, math.Min(smp.Summary.CI95Low, smp.Summary.Median))
		hi = math.Max(hi, math.Max(smp.Summary.CI95High, smp.Summary.Median))
	}
	sc := report.ScaleFor(s.Metric, math.Max(math.Abs(lo), math.Abs(hi)))
	lo, hi = lo/sc.Div, hi/sc.Div
	if hi-lo < 1e-9*math.Max(1, math.Abs(hi)) {
		pad := math.Max(math.Abs(hi)*0.05, 1)
		lo, hi = lo-pad, hi+pad
	}
	step := report.NiceStep((hi - lo) * 1.1 / 5)
	y0 := step * math.Floor(lo/step)
	y1 := step * math.Ceil(hi/step)
	if lo >= 0 && y0 < 0 {
		y0 = 0
	}
	yOf := func(v float64) float64 { return bottom - (bottom-top)*(v/sc.Div-y0)/(y1-y0) }
	xOf := func(i int) float64 { return left + (right-left)*(float64(i)+0.5)/float64(n) }

	title := report.MetricTitle(s.Metric) + " — " + report.CellName(s.Labels)
	p(`<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-trend" id="%s" data-points="%d" data-changes="%d" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-labelledby="%s-title" font-family="%s">`+"\n",
		esc(id), present, len(s.Changes), chartW, chartH, chartW, chartH, esc(id), esc(fontStack))
	p(`<title id="%s-title">%s</title>`+"\n", esc(id), esc(title))
	p(`<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartW, chartH)
	p(`<text x="%s" y="20" font-size="14" font-weight="600" fill="#111">%s</text>`+"\n", f(left-50), esc(title))
	p(`<text x="%s" y="37" font-size="11.5" fill="#555">median with its 95 %% interval per point; %s; dashed: the segments' medians</text>`+"\n",
		f(left-50), esc(report.BetterText(s.Metric)))

	// y grid
	dec := 0
	for dec < 6 && math.Abs(step*math.Pow(10, float64(dec))-math.Round(step*math.Pow(10, float64(dec)))) > 1e-6 {
		dec++
	}
	for v := y0; v <= y1+step*1e-9; v += step {
		y := bottom - (bottom-top)*(v-y0)/(y1-y0)
		p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3" stroke-width="1"/>`, f(left), f(y), f(right), f(y))
		p(`<text x="%s" y="%s" font-size="11" fill="#333" text-anchor="end">%s</text>`+"\n", f(left-6), f(y+4), strconv.FormatFloat(v, 'f', dec, 64))
	}
	mid := (top + bottom) / 2
	p(`<text x="14" y="%s" font-size="12" fill="#222" text-anchor="middle" transform="rotate(-90 14 %s)">%s</text>`+"\n", f(mid), f(mid), esc(report.AxisUnit(s.Metric, sc)))
	p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444" stroke-width="1"/>`+"\n", f(left), f(bottom), f(right), f(bottom))

	// x labels
	for i, pt := range t.Points {
		x := xOf(i)
		name := pt.Name
		if r := []rune(name); len(r) > 18 {
			name = string(r[:17]) + "…"
		}
		p(`<text x="%s" y="%s" font-size="11" fill="#333" text-anchor="end" transform="rotate(-35 %s %s)">%s</text>`+"\n", f(x+3), f(bottom+14), f(x+3), f(bottom+14), esc(name))
	}

	// segments' medians
	bounds := []int{0}
	for _, c := range s.Changes {
		bounds = append(bounds, c.Index)
	}
	bounds = append(bounds, n)
	for j := 0; j+1 < len(bounds); j++ {
		var meds []float64
		for i := bounds[j]; i < bounds[j+1]; i++ {
			if s.Samples[i].Present {
				meds = append(meds, s.Samples[i].Summary.Median)
			}
		}
		if len(meds) == 0 {
			continue
		}
		y := yOf(median(meds))
		p(`<line class="segment" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888" stroke-width="1.2" stroke-dasharray="5 4"/>`+"\n",
			f(xOf(bounds[j])-12), f(y), f(xOf(bounds[j+1]-1)+12), f(y))
	}

	// the series: a line through consecutive present points, whiskers, dots
	var path strings.Builder
	pen := false
	for i, smp := range s.Samples {
		if !smp.Present {
			pen = false
			continue
		}
		cmd := "L"
		if !pen {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%s %s", cmd, f(xOf(i)), f(yOf(smp.Summary.Median)))
		pen = true
	}
	if path.Len() > 0 {
		p(`<path d="%s" stroke="#0072B2" stroke-width="1.8" fill="none"/>`+"\n", path.String())
	}
	for i, smp := range s.Samples {
		if !smp.Present {
			continue
		}
		x := xOf(i)
		yl, yh := yOf(smp.Summary.CI95Low), yOf(smp.Summary.CI95High)
		if math.Abs(yl-yh) >= 0.5 {
			p(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" stroke="#111" stroke-width="1.1" fill="none"/>`,
				f(x), f(yl), f(yh), f(x-4), f(yl), f(x+4), f(x-4), f(yh), f(x+4))
		}
		p(`<circle cx="%s" cy="%s" r="3.5" fill="#0072B2"><title>%s: %s</title></circle>`+"\n",
			f(x), f(yOf(smp.Summary.Median)), esc(t.Points[i].Name), esc(report.Median(s.Metric, smp.Summary)))
	}

	// change points
	for j, c := range s.Changes {
		cls := betterClass(c.Better)
		col := changeColors[cls]
		x := (xOf(c.Index-1) + xOf(c.Index)) / 2
		if c.Index == 0 {
			x = xOf(0)
		}
		ly := 54 + 13*float64(j%2)
		anchor, lx := "start", x+4
		if x > left+(right-left)*0.65 {
			anchor, lx = "end", x-4
		}
		p(`<g class="cp %s"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`, cls, f(x), f(ly+3), f(x), f(bottom), col)
		p(`<text x="%s" y="%s" font-size="12" font-weight="600" fill="%s" text-anchor="%s">%s</text></g>`+"\n", f(lx), f(ly), col, anchor, esc(ChangeLabel(c)))
	}
	p("</svg>\n")
	return b.String()
}
