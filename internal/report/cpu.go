package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// The "CPU profiles" section: where the CPU went in the cells the suite
// profiled (suite --cpu-profile), from the per-repeat metrics cpu_share_<family>
// (exclusive shares of all samples, %), grouped by cell (every label but the
// datapath), and which families differ between each datapath and a
// reference datapath.

// LabelCPUProfile is the label of a CPU-profiled cell ("on").
const LabelCPUProfile = "cpu_profile"

// CPUReferenceDatapath is the datapath the others are compared with in the
// CPU-profile section when it was profiled (the legacy veth path the eBPF
// datapaths improve on); else the first profiled datapath is.
const CPUReferenceDatapath = "veth-routing"

// CPU-profile thresholds (docs/reports.md).
const (
	// cpuMinShownPct: a family below this median share in every datapath
	// of a group is left out of its table and chart.
	cpuMinShownPct = 0.5
	// cpuMinDiffPP: a difference of medians below this many percentage
	// points is not stated, however significant.
	cpuMinDiffPP = 2.0
)

// cpuSamplesMetric is the per-repeat sample count of a profiled repeat.
const cpuSamplesMetric = profile.SamplesMetric

// cpuGroup is the profiled runs of one cell, one per datapath.
type cpuGroup struct {
	// Labels are the cell's labels without the datapath.
	Labels map[string]string
	// DPs are the datapaths profiled in this cell, in the report's order.
	DPs  []string
	Runs map[string]*result.Run
	// Ref is the reference datapath of the group.
	Ref string
	// Families are the families shown (median share ≥ cpuMinShownPct in
	// some datapath), in Families order; Hidden the rest measured.
	Families, Hidden []string
}

// cpuFamilyOrder lists the families in profile.Families order, then any
// other family found in the runs' metrics alphabetically (results written
// by another version).
func cpuFamilyOrder(runs []*result.Run) []string {
	var out []string
	for _, f := range profile.Families {
		out = append(out, f.Name)
	}
	var extra []string
	for _, r := range runs {
		for _, rep := range r.Repeats {
			for k := range rep.Metrics {
				if f, ok := strings.CutPrefix(k, result.CPUSharePrefix); ok && !slices.Contains(out, f) && !slices.Contains(extra, f) {
					extra = append(extra, f)
				}
			}
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// cpuFamilyDoc is the one-line description of a family ("" if unknown).
func cpuFamilyDoc(name string) string {
	for _, f := range profile.Families {
		if f.Name == name {
			return f.Doc
		}
	}
	return ""
}

// profiled reports whether a run was CPU-profiled: it has a profile or
// CPU-profile metrics.
func profiled(r *result.Run) bool {
	if r.Profile != nil {
		return true
	}
	for _, rep := range r.Repeats {
		if rep.Error != "" {
			continue
		}
		for k := range rep.Metrics {
			if strings.HasPrefix(k, result.CPUSharePrefix) {
				return true
			}
		}
	}
	return false
}

// withoutDatapath copies l without the datapath label.
func withoutDatapath(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		if k != LabelDatapath {
			out[k] = v
		}
	}
	return out
}

// cpuGroups groups the set's profiled runs by cell, in display order.
func (m *model) cpuGroups() []*cpuGroup {
	if m.cpu != nil {
		return *m.cpu
	}
	byKey := map[string]*cpuGroup{}
	var groups []*cpuGroup
	var all []*result.Run
	for i := range m.set.Runs {
		r := &m.set.Runs[i]
		if !profiled(r) {
			continue
		}
		all = append(all, r)
		l := withoutDatapath(r.Labels)
		k := result.LabelKey(l)
		g := byKey[k]
		if g == nil {
			g = &cpuGroup{Labels: l, Runs: map[string]*result.Run{}}
			byKey[k] = g
			groups = append(groups, g)
		}
		if _, dup := g.Runs[r.Labels[LabelDatapath]]; !dup {
			g.Runs[r.Labels[LabelDatapath]] = r
		}
	}
	order := cpuFamilyOrder(all)
	for _, g := range groups {
		for _, dp := range m.datapaths {
			if g.Runs[dp] != nil {
				g.DPs = append(g.DPs, dp)
			}
		}
		g.Ref = g.DPs[0]
		if g.Runs[CPUReferenceDatapath] != nil {
			g.Ref = CPUReferenceDatapath
		}
		for _, f := range order {
			top, any := math.Inf(-1), false
			for _, dp := range g.DPs {
				if s, ok := Summary(g.Runs[dp], result.CPUSharePrefix+f); ok {
					top, any = math.Max(top, s.Median), true
				}
			}
			switch {
			case !any:
			case top >= cpuMinShownPct:
				g.Families = append(g.Families, f)
			default:
				g.Hidden = append(g.Hidden, f)
			}
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return groupLess(groups[i].Labels, groups[j].Labels) })
	m.cpu = &groups
	return groups
}

// groupLess orders cells by their labels in the report's key order and
// each label's display order.
func groupLess(a, b map[string]string) bool {
	ks := keys(a)
	for _, k := range keys(b) {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	SortLabelKeys(ks)
	for _, k := range ks {
		if a[k] != b[k] {
			return labelLess(k, a[k], b[k])
		}
	}
	return false
}

// groupShort names a group in a sentence: "cross-node tcp_rr ×1" (other
// labels as key=value; cpu_profile=on, common to all, left out).
func groupShort(l map[string]string) string {
	ks := keys(l)
	SortLabelKeys(ks)
	var parts []string
	for _, k := range ks {
		v := l[k]
		switch k {
		case LabelCPUProfile:
		case LabelPath, LabelTest, LabelScenario:
			parts = append(parts, v)
		case LabelFlows:
			parts = append(parts, "×"+v)
		case LabelMTU:
			parts = append(parts, "MTU "+v)
		default:
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "(no labels)"
	}
	return strings.Join(parts, " ")
}

// groupTitle names a group in a caption: "cross-node, tcp_rr, 1 flow".
func groupTitle(l map[string]string) string {
	c := make(map[string]string, len(l))
	for k, v := range l {
		if k != LabelCPUProfile {
			c[k] = v
		}
	}
	return CellName(c)
}

// cpuDiff is one family's difference between a datapath and the reference.
type cpuDiff struct {
	Family  string
	DeltaPP float64 // median share of the datapath − the reference's, in points
	P       float64
}

// cpuVersus is the comparison of one datapath's shares with the reference's.
type cpuVersus struct {
	DP, Ref string
	Group   *cpuGroup
	// Diffs are the families that differ (≥ cpuMinDiffPP and
	// significant), the largest change first.
	Diffs []cpuDiff
	// TooFew: the repeats cannot give a verdict (n vs m).
	TooFew bool
	N, M   int
}

// cpuCompare compares every family's share of dp with the reference's.
func (g *cpuGroup) compare(dp string) cpuVersus {
	v := cpuVersus{DP: dp, Ref: g.Ref, Group: g}
	ref, run := g.Runs[g.Ref], g.Runs[dp]
	for _, f := range append(slices.Clone(g.Families), g.Hidden...) {
		metric := result.CPUSharePrefix + f
		a, b := Values(ref, metric), Values(run, metric)
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		c := stats.Compare(a, b)
		v.N, v.M = c.Old.N, c.New.N
		if c.TooFew {
			v.TooFew = true
			continue
		}
		d := c.New.Median - c.Old.Median
		if c.Significant && math.Abs(d) >= cpuMinDiffPP {
			v.Diffs = append(v.Diffs, cpuDiff{Family: f, DeltaPP: d, P: c.P})
		}
	}
	slices.SortStableFunc(v.Diffs, func(x, y cpuDiff) int {
		if c := cmp.Compare(math.Abs(y.DeltaPP), math.Abs(x.DeltaPP)); c != 0 {
			return c
		}
		return cmp.Compare(x.Family, y.Family)
	})
	return v
}

// signedPP is "+6.2 pp" or "−12.1 pp" (a real minus sign).
func signedPP(d float64) string {
	if math.Abs(d) < 0.05 {
		d = 0
	}
	s := fmt.Sprintf("%+.1f"+nbsp+"pp", d)
	return strings.Replace(s, "-", "−", 1)
}

// pEq is "p = 0.008" or "p < 0.001".
func pEq(p float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	return fmt.Sprintf("p = %.3f", p)
}

// diffsText lists the differences: "netfilter −12.1 pp (p = 0.008), …";
// without p-values when short.
func (v cpuVersus) diffsText(withP bool) string {
	var parts []string
	for _, d := range v.Diffs {
		s := d.Family + " " + signedPP(d.DeltaPP)
		if withP {
			s += " (" + pEq(d.P) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// sentence states the comparison: "ebpf-host-routing vs veth-routing,
// cross-node tcp_rr ×1: netfilter −12.1 pp (p = 0.008), …".
func (v cpuVersus) sentence() string {
	head := fmt.Sprintf("%s vs %s, %s: ", show(v.DP), show(v.Ref), groupShort(v.Group.Labels))
	switch {
	case len(v.Diffs) > 0:
		return head + v.diffsText(true)
	case v.TooFew:
		return head + fmt.Sprintf("no verdict, n=%d vs %d repeats are too few for a significance test (need ≥ %d each)", v.N, v.M, stats.NeededEach(0.05))
	}
	return head + fmt.Sprintf("no family differs significantly by %.0f"+nbsp+"pp or more", cpuMinDiffPP)
}

// cpuWhy is the CPU-profile statement of the summary's why for dp: its
// significant differences against each group's reference ("" when none).
func (m *model) cpuWhy(dp string) string {
	var parts []string
	for _, g := range m.cpuGroups() {
		if dp == g.Ref || g.Runs[dp] == nil {
			continue
		}
		if v := g.compare(dp); len(v.Diffs) > 0 {
			parts = append(parts, fmt.Sprintf("vs %s, %s: %s", show(g.Ref), groupShort(g.Labels), v.diffsText(false)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "CPU profile " + strings.Join(parts, "; ")
}

// cpuCell is a table cell of a family's share: "12.1 ± 0.8" (the 95 %
// interval's half-width in percentage points: a share's interval relative
// to a small median would read "± 1200%").
func cpuCell(r *result.Run, metric string) string {
	s, ok := Summary(r, metric)
	switch {
	case !ok:
		return "—"
	case s.Median == 0 && s.Max == 0:
		return "0"
	}
	out := Num(s.Median)
	if s.CI95High > s.CI95Low {
		out += " ± " + Num((s.CI95High-s.CI95Low)/2)
	}
	if stats.Notable(s) {
		out += " " + noteMark
	}
	return out
}

// cpuSection is the "CPU profiles" section (false when nothing was profiled).
func (m *model) cpuSection() (section, bool) {
	groups := m.cpuGroups()
	if len(groups) == 0 {
		return section{}, false
	}
	s := section{ID: "cpu", Title: "CPU profiles"}
	s.Blocks = append(s.Blocks, block{Para: fmt.Sprintf("Where the CPU went in the profiled cells (cnibench suite --cpu-profile; docs/profiles.md): each symbol family's exclusive share of all samples, every CPU and idle included, in %% — median over the repeats ± the half-width of its 95 %% interval, in percentage points. Families under %.1f %% in every datapath of a cell are left out (results.json has them). Each datapath is compared with a reference, %s when it was profiled, else the first profiled datapath; a family's difference is stated when the medians differ by at least %.0f percentage points (pp) and a two-sided Mann–Whitney U test over the repeats finds it significant (p ≤ 0.05).",
		cpuMinShownPct, CPUReferenceDatapath, cpuMinDiffPP)})
	shown := map[string]bool{}
	for gi, g := range groups {
		t := &table{Caption: "CPU profile, " + groupTitle(g.Labels) + " (share of samples, %)", Header: []string{"Datapath"}, Right: []bool{false}, Keys: 1}
		for _, f := range g.Families {
			t.Header = append(t.Header, f)
			t.Right = append(t.Right, true)
			shown[f] = true
		}
		t.Header = append(t.Header, "samples")
		t.Right = append(t.Right, true)
		for _, dp := range g.DPs {
			r := g.Runs[dp]
			name := show(dp)
			if dp == g.Ref && len(g.DPs) > 1 {
				name += " (reference)"
			}
			row := []cell{txt(name)}
			for _, f := range g.Families {
				row = append(row, txt(cpuCell(r, result.CPUSharePrefix+f)))
			}
			samples := "—"
			if sm, ok := Summary(r, cpuSamplesMetric); ok {
				samples = countText(sm.Median)
			}
			row = append(row, txt(samples))
			t.Rows = append(t.Rows, row)
		}
		s.Blocks = append(s.Blocks, block{Table: t})
		if c := m.cpuChart(g, gi); c != nil {
			s.Blocks = append(s.Blocks, block{Charts: []chart{c}})
		}
		var items []string
		for _, dp := range g.DPs {
			if dp != g.Ref {
				items = append(items, g.compare(dp).sentence())
			}
		}
		if len(items) > 0 {
			s.Blocks = append(s.Blocks, block{List: items})
		}
		s.Blocks = append(s.Blocks, m.flameBlocks(g)...)
	}
	var docs []string
	for _, f := range cpuFamilyOrder(nil) {
		if d := cpuFamilyDoc(f); shown[f] && d != "" {
			docs = append(docs, f+": "+d)
		}
	}
	if len(docs) > 0 {
		s.Blocks = append(s.Blocks, block{Para: "The families (their symbol patterns are in docs/profiles.md):"}, block{List: docs, Detail: true})
	}
	if n := m.flameNotes(); len(n) > 0 {
		s.Blocks = append(s.Blocks, block{Para: "Flamegraphs left out:"}, block{List: n})
	}
	return s, true
}

// cpuChart is a group's stacked bar chart: one bar per datapath, one
// segment per shown family, the hidden families as one "other" segment.
func (m *model) cpuChart(g *cpuGroup, i int) *stackedChart {
	c := &stackedChart{
		ID:       fmt.Sprintf("cpu-%d-%s", i, slug(groupShort(g.Labels))),
		Kind:     "cpu",
		Title:    "Where the CPU went — " + groupTitle(g.Labels),
		Subtitle: "median share of all samples per symbol family (exclusive, every CPU, idle included)",
		Unit:     "%",
		XLabel:   "share of samples (%)",
	}
	for _, f := range g.Families {
		c.Segments = append(c.Segments, f)
		c.Colors = append(c.Colors, familyColor(f))
	}
	// The hidden families with any share at all make one segment.
	var small []string
	for _, f := range g.Hidden {
		for _, dp := range g.DPs {
			if s, ok := Summary(g.Runs[dp], result.CPUSharePrefix+f); ok && s.Median > 0 {
				small = append(small, f)
				break
			}
		}
	}
	if len(small) > 0 {
		c.Segments = append(c.Segments, "other families")
		c.Colors = append(c.Colors, otherFamiliesColor)
	}
	for _, dp := range g.DPs {
		r := g.Runs[dp]
		var vals []float64
		for _, f := range g.Families {
			s, _ := Summary(r, result.CPUSharePrefix+f)
			vals = append(vals, s.Median)
		}
		if len(small) > 0 {
			rest := 0.0
			for _, f := range small {
				s, _ := Summary(r, result.CPUSharePrefix+f)
				rest += s.Median
			}
			vals = append(vals, rest)
		}
		c.Categories = append(c.Categories, show(dp))
		c.Vals = append(c.Vals, vals)
	}
	if c.points() == 0 {
		return nil
	}
	if len(small) > 0 {
		c.Note = fmt.Sprintf("other families: %s (each under %.1f %%)", strings.Join(small, ", "), cpuMinShownPct)
	}
	return c
}
