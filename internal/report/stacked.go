package report

import (
	"fmt"
	"hash/fnv"
	"math"
)

// stackedChart is a horizontal stacked bar chart: one bar per category
// (datapath), one segment per series (symbol family), in series order from
// the left. It follows the other charts' conventions: role, title and
// desc, no scripts, a <title> per segment for hovering.
type stackedChart struct {
	ID, Kind   string
	Title      string
	Subtitle   string
	XLabel     string
	Unit       string // appended to values in the tooltips ("%")
	Categories []string
	Segments   []string
	Colors     []string    // one per segment
	Vals       [][]float64 // [category][segment]; ≤ 0 draws nothing
	Note       string
}

// familyColors are the CPU-profile families' colours: fixed, so that a
// family has the same colour in every chart and report (kernel networking
// warm, BPF purple as in the flamegraphs, user space cool, idle light).
var familyColors = map[string]string{
	"netfilter":    "#D55E00",
	"veth":         "#E69F00",
	"backlog":      "#F0C419",
	"bridge":       "#CC79A7",
	"tunnel":       "#A6761D",
	"bpf":          "#7B3FA0",
	"tcpip":        "#0072B2",
	"copy":         "#009E73",
	"crypto":       "#8C2D04",
	"sched_idle":   "#D4D4D4",
	"engine":       "#56B4E9",
	"other_procs":  "#9EDAE5",
	"kernel_other": "#8C8C8C",
}

// otherFamiliesColor fills the segment of the families too small to show.
const otherFamiliesColor = "#EFEFEF"

// familyColor is a family's colour; an unknown family gets a palette
// colour chosen by a hash of its name (deterministic).
func familyColor(name string) string {
	if c, ok := familyColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return palette[int(h.Sum32()%uint32(len(palette)))]
}

func (c *stackedChart) points() int {
	n := 0
	for _, cat := range c.Vals {
		for _, v := range cat {
			if v > 0 {
				n++
			}
		}
	}
	return n
}

// svg renders the chart.
func (c *stackedChart) svg() string {
	var w svgWriter
	maxLabel := 0.0
	for _, cat := range c.Categories {
		maxLabel = math.Max(maxLabel, textWidth(cat, 12))
	}
	left := math.Min(260, math.Max(90, maxLabel+18))
	const right = chartW - 20.0
	rows := legendRows(12, chartW-12, c.Segments)
	top := 62.0 + 18*float64(len(rows))
	const barH, gap = 26.0, 10.0
	bottom := top + float64(len(c.Categories))*(barH+gap)
	h := int(bottom + 44)
	if c.Note != "" {
		h += 16
	}
	w.open(c.ID, "stacked chart-"+c.Kind, c.Title, c.Subtitle, h, c.points())
	w.subtitle(c.Subtitle)
	for r, idx := range rows {
		x, y := 12.0, 62+18*float64(r)
		for _, i := range idx {
			w.p(`<rect x="%s" y="%s" width="11" height="11" fill="%s" stroke="#777" stroke-width="0.5"/>`, f(x), f(y-9), c.Colors[i])
			w.p(`<text x="%s" y="%s" font-size="12" fill="#222">%s</text>`+"\n", f(x+15), f(y), esc(c.Segments[i]))
			x += legendEntryWidth(c.Segments[i])
		}
	}
	total := 100.0
	for _, cat := range c.Vals {
		s := 0.0
		for _, v := range cat {
			s += math.Max(0, v)
		}
		total = math.Max(total, s)
	}
	xOf := func(v float64) float64 { return left + (right-left)*v/total }
	step := NiceStep(total / 5)
	for t := 0.0; t <= total*(1+1e-9); t += step {
		x := xOf(t)
		w.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3" stroke-width="1"/>`, f(x), f(top-4), f(x), f(bottom))
		w.p(`<text x="%s" y="%s" font-size="11" fill="#333" text-anchor="middle">%s</text>`+"\n", f(x), f(bottom+14), Num(t))
	}
	w.p(`<text x="%s" y="%s" font-size="12" fill="#222" text-anchor="middle">%s</text>`+"\n", f((left+right)/2), f(bottom+32), esc(c.XLabel))
	for ci, cat := range c.Categories {
		y := top + float64(ci)*(barH+gap)
		w.p(`<text x="%s" y="%s" font-size="12" fill="#222" text-anchor="end">%s</text>`+"\n", f(left-6), f(y+barH/2+4), esc(cat))
		x := 0.0
		for si, v := range c.Vals[ci] {
			if v <= 0 {
				continue
			}
			x0, x1 := xOf(x), xOf(x+v)
			x += v
			w.p(`<rect class="seg" x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#fff" stroke-width="0.6"><title>%s, %s: %s</title></rect>`,
				f(x0), f(y), f(x1-x0), f(barH), c.Colors[si], esc(cat), esc(c.Segments[si]), esc(Num(v)+" "+c.Unit))
			if label := Num(v); textWidth(label, 10)+4 < x1-x0 {
				w.p(`<text x="%s" y="%s" font-size="10" fill="%s" text-anchor="middle">%s</text>`, f((x0+x1)/2), f(y+barH/2+3.5), labelInk(c.Colors[si]), esc(label))
			}
			w.p("\n")
		}
	}
	w.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444" stroke-width="1"/>`+"\n", f(left), f(top-4), f(left), f(bottom))
	if c.Note != "" {
		w.p(`<text x="12" y="%d" font-size="11" fill="#555">%s</text>`+"\n", h-8, esc(c.Note))
	}
	w.p("</svg>\n")
	return w.b.String()
}

// labelInk is black or white, whichever reads better on fill (#rrggbb).
func labelInk(fill string) string {
	var r, g, b int
	if _, err := fmt.Sscanf(fill, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return "#111"
	}
	if 0.299*float64(r)+0.587*float64(g)+0.114*float64(b) < 140 {
		return "#fff"
	}
	return "#111"
}
