package flame

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// Geometry, in px. Labels are monospace so that their width is known both
// here and in the script (charW per character, which must match the
// script's C.cw).
const (
	pad      = 10
	rowH     = 16
	charW    = 6.7
	titleY   = 24
	lineH    = 18
	fontSize = 11
)

// SVG writes p as an interactive flamegraph (icicle: "all" at the top).
// The result is a standalone SVG file, or an element to inline in HTML when
// o.Inline is set. Bad options give an error naming the field; a profile
// without samples gives an error wrapping ErrNoSamples.
func SVG(w io.Writer, p *profile.Profile, o Options) error {
	o, err := o.normalize()
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("flame: profile is nil: pass the recorded *profile.Profile")
	}
	root := build(p)
	if root.total == 0 {
		return fmt.Errorf("flame: %w (no sample has a positive count in value 0)", ErrNoSamples)
	}
	frames, deepest := layout(root, o.MinFraction, o.MaxDepth)
	total := root.total
	g := graph{
		o:       o,
		title:   cmpOr(o.Title, "Flamegraph"),
		frames:  frames,
		deepest: deepest,
		total:   total,
		fill:    func(f frame) string { return frameColor(f.n) },
		tip:     func(f frame) string { return tipText(f.n, total) },
	}
	if o.Subtitle != "" {
		g.subtitles = append(g.subtitles, o.Subtitle)
	}
	g.subtitles = append(g.subtitles, fmt.Sprintf("%d samples · click a frame to zoom, hover for details", total))
	return g.write(w)
}

// graph is what SVG and DiffSVG render.
type graph struct {
	o         Options
	title     string
	subtitles []string
	legend    []legendItem // coloured swatches under the subtitles
	frames    []frame
	deepest   int
	total     int64
	fill      func(frame) string
	tip       func(frame) string
	footHead  string
	foot      []footLine // lines under the graph
}

type legendItem struct{ fill, text string }

type footLine struct{ text, title string }

func (g *graph) write(w io.Writer) error {
	o := g.o
	var b bytes.Buffer
	gw := float64(o.Width - 2*pad)
	y := titleY + lineH*len(g.subtitles)
	if len(g.legend) > 0 {
		y += lineH
	}
	ctlY := y + lineH
	top := ctlY + 10
	graphBottom := top + (g.deepest+1)*rowH
	detailsY := graphBottom + lineH
	height := detailsY + 8
	if len(g.foot) > 0 || g.footHead != "" {
		height += lineH * (len(g.foot) + 1)
	}

	if !o.Inline {
		b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="no"?>` + "\n")
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="flame" width="%d" height="%d" viewBox="0 0 %d %d" data-frames="%d" data-samples="%d">`+"\n",
		o.ID, o.Width, height, o.Width, height, len(g.frames), g.total)
	b.WriteString("<style>" + strings.ReplaceAll(styleTmpl, "#ID", "#"+o.ID) + "</style>\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fdfdfd"/>`+"\n", o.Width, height)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="%d">%s</text>`+"\n", pad, titleY, esc(g.title))
	for i, s := range g.subtitles {
		fmt.Fprintf(&b, `<text class="sub" x="%d" y="%d">%s</text>`+"\n", pad, titleY+lineH*(i+1), esc(s))
	}
	if len(g.legend) > 0 {
		x := pad
		ly := titleY + lineH*(len(g.subtitles)+1)
		for _, l := range g.legend {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text class="sub" x="%d" y="%d">%s</text>`+"\n",
				x, ly-10, l.fill, x+16, ly, esc(l.text))
			x += 16 + int(float64(len([]rune(l.text)))*7.2) + 14
		}
	}
	fmt.Fprintf(&b, `<text id="%s-reset" class="ctl off" x="%d" y="%d">Reset zoom</text>`+"\n", o.ID, pad, ctlY)
	fmt.Fprintf(&b, `<text id="%s-search" class="ctl" x="%d" y="%d">Search</text>`+"\n", o.ID, pad+90, ctlY)
	fmt.Fprintf(&b, `<text id="%s-matched" class="matched" x="%d" y="%d" text-anchor="end"></text>`+"\n", o.ID, o.Width-pad, ctlY)

	fmt.Fprintf(&b, `<g id="%s-frames">`+"\n", o.ID)
	for _, f := range g.frames {
		x := pad + float64(f.start)/float64(g.total)*gw
		wd := float64(f.n.total) / float64(g.total) * gw
		fy := top + f.depth*rowH
		fmt.Fprintf(&b, `<g class="f" data-s="%d" data-n="%d" data-d="%d"><title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/><text x="%.2f" y="%d">%s</text></g>`+"\n",
			f.start, f.n.total, f.depth, esc(g.tip(f)), x, fy, wd, rowH-1, g.fill(f), x+3, fy+rowH-4, esc(label(displayName(f.n), wd)))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<text id="%s-details" class="sub" x="%d" y="%d"></text>`+"\n", o.ID, pad, detailsY)
	fy := detailsY + lineH
	if g.footHead != "" {
		fmt.Fprintf(&b, `<text class="sub" x="%d" y="%d">%s</text>`+"\n", pad, fy, esc(g.footHead))
		fy += lineH
	}
	for _, l := range g.foot {
		fmt.Fprintf(&b, `<text class="gone" x="%d" y="%d"><title>%s</title>%s</text>`+"\n", pad+10, fy, esc(l.title), esc(l.text))
		fy += lineH
	}
	cfg := fmt.Sprintf(`{id:"%s",pad:%d,gw:%s,cw:%s,total:%d}`, o.ID, pad, ftoa(gw), ftoa(charW), g.total)
	b.WriteString("<script><![CDATA[\n" + strings.Replace(scriptTmpl, "CONFIG", cfg, 1) + "]]></script>\n")
	b.WriteString("</svg>\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("flame: writing the SVG: %w", err)
	}
	return nil
}

// displayName is a frame's name as shown: merged frames say how many.
func displayName(n *node) string {
	if n.merged > 0 {
		return fmt.Sprintf("… (%d narrow frames)", n.merged)
	}
	return n.name
}

// tipText is a frame's hover text: "name — N samples (x.x %)". The script
// takes the name back as everything before the last " — ".
func tipText(n *node, total int64) string {
	return fmt.Sprintf("%s — %d samples (%s)", displayName(n), n.total, pct(float64(n.total)/float64(total)))
}

// label fits name into a frame w px wide: whole, cut with "…", or empty
// when fewer than 3 characters fit. The script's label() does the same.
func label(name string, w float64) string {
	n := int((w - 6) / charW)
	if n < 3 {
		return ""
	}
	r := []rune(name)
	if len(r) <= n {
		return name
	}
	return string(r[:n-1]) + "…"
}

// pct formats a fraction as a percentage: one decimal from 1 %, two below.
func pct(f float64) string {
	if f >= 0.01 || f == 0 {
		return strconv.FormatFloat(100*f, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(100*f, 'f', 2, 64) + " %"
}

// signedPct formats a change of share with its sign (a true minus sign).
func signedPct(d float64) string {
	s := pct(abs(d))
	switch {
	case s == "0.0 %" || s == "0.00 %":
		return "±0.0 %"
	case d < 0:
		return "−" + s
	default:
		return "+" + s
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// esc escapes text for XML character data and attribute values; invalid
// characters become U+FFFD.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
