package flame

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// maxGone is how many frames present only in the base are listed under a
// differential graph; the rest are summed in one line.
const maxGone = 20

// DiffSVG writes a differential flamegraph of other against base (e.g. two
// datapaths of one run): the frames and widths are other's; each frame is
// coloured by the change of its share of all samples, other % − base %
// (red grew, blue shrank, full colour at the largest change shown). A
// frame is the same frame in both when its whole path from the root is.
// Frames only in base have no width in other: the outermost of them are
// listed under the graph ("gone in B: process_backlog −12.3 %"). The
// title names base (A, o.BaseLabel) and other (B, o.OtherLabel).
func DiffSVG(w io.Writer, base, other *profile.Profile, o Options) error {
	o, err := o.normalize()
	if err != nil {
		return err
	}
	if base == nil || other == nil {
		return fmt.Errorf("flame: a profile of the differential graph is nil: pass both recorded profiles (base and other)")
	}
	bt, ot := build(base), build(other)
	if bt.total == 0 {
		return fmt.Errorf("flame: base profile %q: %w (no sample has a positive count in value 0)", o.BaseLabel, ErrNoSamples)
	}
	if ot.total == 0 {
		return fmt.Errorf("flame: other profile %q: %w (no sample has a positive count in value 0)", o.OtherLabel, ErrNoSamples)
	}
	frames, deepest := layout(ot, o.MinFraction, o.MaxDepth)
	bTotal, oTotal := float64(bt.total), float64(ot.total)

	// share of a frame in base: the node at the same path, or for a "…"
	// frame the nodes of the frames it merged.
	baseShare := func(f frame) float64 {
		if f.n.merged == 0 {
			if n := bt.lookup(f.path); n != nil {
				return float64(n.total) / bTotal
			}
			return 0
		}
		parent := bt.lookup(f.path[:len(f.path)-1])
		if parent == nil {
			return 0
		}
		var sum int64
		for _, part := range f.n.parts {
			if n := parent.children[part.name]; n != nil {
				sum += n.total
			}
		}
		return float64(sum) / bTotal
	}
	deltas := make(map[*node]float64, len(frames))
	bases := make(map[*node]float64, len(frames))
	scale := 0.0
	for _, f := range frames {
		b := baseShare(f)
		d := float64(f.n.total)/oTotal - b
		bases[f.n], deltas[f.n] = b, d
		scale = max(scale, abs(d))
	}

	title := cmpOr(o.Title, "Differential flamegraph")
	g := graph{
		o:       o,
		title:   title,
		frames:  frames,
		deepest: deepest,
		total:   ot.total,
		fill:    func(f frame) string { return diffColor(deltas[f.n], scale) },
		tip: func(f frame) string {
			return fmt.Sprintf("%s · A %s → B %s: %s", tipText(f.n, ot.total),
				pct(bases[f.n]), pct(float64(f.n.total)/oTotal), signedPct(deltas[f.n]))
		},
	}
	if o.Subtitle != "" {
		g.subtitles = append(g.subtitles, o.Subtitle)
	}
	g.subtitles = append(g.subtitles,
		fmt.Sprintf("A (base) = %s, %d samples; B (other) = %s, %d samples", o.BaseLabel, bt.total, o.OtherLabel, ot.total),
		"widths: B · colour: change of each frame's share of all samples, B % − A %")
	g.legend = []legendItem{
		{diffColor(1, 1), "grew in B (full colour: " + signedPct(scale) + ")"},
		{diffColor(-1, 1), "shrank in B (" + signedPct(-scale) + ")"},
		{diffColor(0, 1), "unchanged"},
	}
	g.footHead, g.foot = goneLines(bt, ot, o.MinFraction)
	return g.write(w)
}

// goneLines lists the outermost frames of base whose path is not in other,
// largest first, those narrower than minFrac of base summed in one line.
func goneLines(bt, ot *node, minFrac float64) (string, []footLine) {
	type gone struct {
		path  []string
		share float64
	}
	var all []gone
	var walk func(b, o *node, path []string)
	walk = func(b, o *node, path []string) {
		for _, c := range b.sorted {
			p := append(slices.Clip(path), c.name)
			if oc := o.children[c.name]; oc != nil {
				walk(c, oc, p)
				continue
			}
			all = append(all, gone{p, float64(c.total) / float64(bt.total)})
		}
	}
	walk(bt, ot, nil)
	if len(all) == 0 {
		return "", nil
	}
	slices.SortStableFunc(all, func(a, b gone) int {
		if c := cmp.Compare(b.share, a.share); c != 0 {
			return c
		}
		return slices.Compare(a.path, b.path)
	})
	var lines []footLine
	var restN int
	var rest float64
	for _, g := range all {
		if len(lines) >= maxGone || g.share < minFrac {
			restN++
			rest += g.share
			continue
		}
		lines = append(lines, footLine{
			text:  fmt.Sprintf("gone in B: %s %s", g.path[len(g.path)-1], signedPct(-g.share)),
			title: "all;" + strings.Join(g.path, ";"),
		})
	}
	if restN > 0 {
		lines = append(lines, footLine{
			text:  fmt.Sprintf("gone in B: %d more frames %s", restN, signedPct(-rest)),
			title: "frames of A without a counterpart in B, each narrower or fewer than those listed",
		})
	}
	return "Only in A (base), no width in B:", lines
}
