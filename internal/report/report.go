// Package report renders a cnibench/results/v1 set as a self-contained
// HTML page (inline SVG charts, no scripts, no external resources), as
// Markdown for pasting into a GitHub issue, and as a terminal table. All
// three show the same tables; the output is deterministic (sorted keys,
// no timestamps other than the set's own).
package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/stats"
	"github.com/cnibench/cnibench/pkg/result"
)

// document is the format-neutral report: sections of blocks.
type document struct {
	Title    string
	Subtitle string
	Sections []section
}

type section struct {
	ID     string
	Title  string
	Blocks []block
}

// block is one of: a paragraph, a bullet list, a table, or a chart.
type block struct {
	Para   string
	List   []string
	Table  *table
	Charts []chart
}

type chart interface {
	svg() string
	points() int
}

type table struct {
	Caption string
	Header  []string
	Right   []bool // right-align column
	Rows    [][]cell
}

type cell struct {
	Text  string
	Class string // CSS class (grades); colours the terminal output too
}

func txt(s string) cell { return cell{Text: s} }

const noteMark = "*"

// build assembles the document for set.
func build(set *result.Set) *document {
	m := newModel(set)
	d := &document{Title: "cnibench report"}
	d.Subtitle = subtitle(set)
	d.Sections = append(d.Sections, m.summarySection())
	d.Sections = append(d.Sections, m.hostSection())
	d.Sections = append(d.Sections, m.datapathSection())
	for _, test := range m.tests {
		if s, ok := m.testSection(test); ok {
			d.Sections = append(d.Sections, s)
		}
	}
	d.Sections = append(d.Sections, m.mtuSections()...)
	d.Sections = append(d.Sections, m.scenarioSections()...)
	d.Sections = append(d.Sections, m.skippedSection())
	d.Sections = append(d.Sections, m.warningSection())
	return d
}

func subtitle(set *result.Set) string {
	var parts []string
	if !set.Start.IsZero() {
		s := "measured " + set.Start.UTC().Format(time.RFC3339)
		if !set.End.IsZero() {
			s += " – " + set.End.UTC().Format(time.RFC3339)
		}
		parts = append(parts, s)
	}
	if set.Host.Hostname != "" {
		parts = append(parts, "on "+set.Host.Hostname)
	}
	if set.Tool.Version != "" {
		parts = append(parts, "with "+strings.TrimSpace(set.Tool.Name+" "+set.Tool.Version))
	}
	if set.Interrupted {
		parts = append(parts, "INTERRUPTED: incomplete results")
	}
	return strings.Join(parts, ", ")
}

func (m *model) summarySection() section {
	s := section{ID: "summary", Title: "Summary"}
	gts := m.grades()
	if len(gts) == 0 {
		s.Blocks = append(s.Blocks, block{Para: "No graded summary: the set has no node-to-node \"baseline\" datapath to compare with."})
		return s
	}
	for _, gt := range gts {
		t := &table{Caption: "Relative to the node-to-node baseline, " + gt.Path + " path", Header: []string{"Datapath"}}
		t.Right = []bool{false}
		for _, test := range gt.Tests {
			t.Header = append(t.Header, test)
			t.Right = append(t.Right, false)
		}
		for _, r := range gt.Rows {
			row := []cell{txt(r.Datapath)}
			for _, c := range r.Cells {
				row = append(row, cell{Text: c.text(), Class: c.Grade.class()})
			}
			t.Rows = append(t.Rows, row)
		}
		s.Blocks = append(s.Blocks, block{Table: t})
	}
	s.Blocks = append(s.Blocks, block{Para: GradeExplanation()})
	return s
}

func (m *model) hostSection() section {
	set := m.set
	t := &table{Header: []string{"Fact", "Value"}}
	add := func(k, v string) {
		if v != "" {
			t.Rows = append(t.Rows, []cell{txt(k), txt(v)})
		}
	}
	add("Hostname", set.Host.Hostname)
	add("Kernel", set.Host.Kernel)
	add("OS", set.Host.OS)
	add("CPU", set.Host.CPUModel)
	if set.Host.Cores > 0 {
		add("Cores", strconv.Itoa(set.Host.Cores))
	}
	if set.Host.MemBytes > 0 {
		add("Memory", Value(result.ClientRSSBytes, float64(set.Host.MemBytes)))
	}
	tool := strings.TrimSpace(set.Tool.Name + " " + set.Tool.Version)
	if set.Tool.Commit != "" {
		tool += " (commit " + set.Tool.Commit + ")"
	}
	if set.Tool.Go != "" {
		tool += ", " + set.Tool.Go
	}
	add("Tool", tool)
	if !set.Start.IsZero() {
		add("Start", set.Start.UTC().Format(time.RFC3339))
	}
	if !set.End.IsZero() {
		add("End", set.End.UTC().Format(time.RFC3339))
	}
	add("Runs", strconv.Itoa(len(set.Runs)))
	for _, k := range keys(set.Config) {
		add("config: "+k, set.Config[k])
	}
	return section{ID: "host", Title: "Host and configuration", Blocks: []block{{Table: t}}}
}

func (m *model) datapathSection() section {
	t := &table{Header: []string{"Datapath", "Description", "Packet path", "Status"}}
	for _, dp := range m.datapaths {
		info := m.dpInfo[dp]
		status := "measured"
		if r := m.skipReason(dp); r != "" {
			status = "skipped: " + r
		} else if !m.measured(dp) {
			status = "no runs"
		}
		desc, pp := info.Description, info.PacketPath
		if desc == "" {
			desc = "—"
		}
		if pp == "" {
			pp = "—"
		}
		t.Rows = append(t.Rows, []cell{txt(show(dp)), txt(desc), txt(pp), txt(status)})
	}
	return section{ID: "datapaths", Title: "Datapaths", Blocks: []block{{Table: t}}}
}

// fmtSummary is a table cell for a summary: median ± CI, marked when the
// summary has notable warnings.
func fmtSummary(metric string, s stats.Summary, ok bool) string {
	if !ok {
		return "—"
	}
	out := Median(metric, s)
	if stats.Notable(s) {
		out += " " + noteMark
	}
	return out
}

// ratioText is datapath ÷ baseline (direction-aware) in percent.
func ratioText(metric string, run, base *result.Run) string {
	if base == nil || run == base {
		return "—"
	}
	sd, ok1 := Summary(run, metric)
	sb, ok2 := Summary(base, metric)
	if !ok1 || !ok2 || sd.Median <= 0 || sb.Median <= 0 {
		return "—"
	}
	r := sd.Median / sb.Median
	if result.Info(metric).Better == result.LowerIsBetter {
		r = sb.Median / sd.Median
	}
	return fmt.Sprintf("%.0f %%", 100*r)
}

// testMetrics are the columns of a test's table.
func testMetrics(test string, runs []*result.Run) []string {
	cands := []string{PrimaryMetric(test), CPUMetric(test)}
	if IsStream(test) {
		cands = append(cands, result.LossPct, result.TCPRetransmits)
	} else {
		cands = append(cands, result.LatencyUsP50, result.LatencyUsP99)
	}
	var out []string
	for _, c := range cands {
		for _, r := range runs {
			if _, ok := Summary(r, c); ok {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func (m *model) testSection(test string) (section, bool) {
	runs := filter(m.main, map[string]string{LabelTest: test})
	if len(runs) == 0 {
		return section{}, false
	}
	primary := PrimaryMetric(test)
	s := section{ID: "test-" + slug(test), Title: "Test " + test}
	mtu := ""
	if m.defaultMTU != "" {
		mtu = "; MTU " + m.defaultMTU
	}
	s.Blocks = append(s.Blocks, block{Para: fmt.Sprintf("%s in %s (%s)%s. Values are medians ± the half-width of their 95 %% confidence interval; \"of baseline\" is the share of the node-to-node baseline's %s.",
		MetricTitle(primary), ScaleFor(primary, 0).Unit, BetterText(primary), mtu, strings.ToLower(MetricTitle(primary)))})
	metrics := testMetrics(test, runs)
	t := &table{Header: []string{"Flows", "Datapath", "Path"}, Right: []bool{true, false, false}}
	for i, mt := range metrics {
		t.Header = append(t.Header, MetricTitle(mt))
		t.Right = append(t.Right, true)
		if i == 0 {
			t.Header = append(t.Header, "of baseline")
			t.Right = append(t.Right, true)
		}
	}
	flows := values(runs, LabelFlows)
	paths := values(runs, LabelPath)
	for _, fl := range flows {
		for _, dp := range m.datapaths {
			for _, path := range paths {
				r := find(runs, map[string]string{LabelFlows: fl, LabelDatapath: dp, LabelPath: path})
				if r == nil {
					continue
				}
				row := []cell{txt(show(fl)), txt(show(dp)), txt(show(path))}
				for i, mt := range metrics {
					sum, ok := Summary(r, mt)
					row = append(row, txt(fmtSummary(mt, sum, ok)))
					if i == 0 {
						row = append(row, txt(ratioText(mt, r, baselineRun(m.main, r.Labels))))
					}
				}
				t.Rows = append(t.Rows, row)
			}
		}
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	var charts []chart
	for _, fl := range flows {
		if c := m.datapathBarChart("primary", test, fl, primary, runs); c != nil {
			charts = append(charts, c)
		}
		if c := m.datapathBarChart("cpu", test, fl, CPUMetric(test), runs); c != nil {
			charts = append(charts, c)
		}
	}
	for _, fl := range flows {
		for _, path := range paths {
			if path == "node-to-node" {
				continue
			}
			if c := m.latencyChart(test, fl, path, runs); c != nil {
				charts = append(charts, c)
			}
		}
	}
	if len(charts) > 0 {
		s.Blocks = append(s.Blocks, block{Charts: charts})
	}
	return s, true
}

func showAll(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = show(v)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func flowsText(fl string) string {
	if fl == "1" {
		return "1 flow"
	}
	return fl + " flows"
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '.':
			b.WriteRune('_')
		default:
			b.WriteRune('-')
		}
	}
	return b.String()
}

// skippedNote lists the skipped datapaths for a chart caption.
func (m *model) skippedNote() string {
	var parts []string
	for _, dp := range m.datapaths {
		if r := m.skipReason(dp); r != "" {
			parts = append(parts, dp+" skipped: "+r)
		}
	}
	return strings.Join(parts, "; ")
}

// datapathBarChart: one group per datapath, one bar per path, CI error
// bars, the baseline's median as a dashed line.
func (m *model) datapathBarChart(kind, test, fl, metric string, runs []*result.Run) *barChart {
	sel := filter(runs, map[string]string{LabelFlows: fl})
	paths := values(sel, LabelPath)
	maxV := 0.0
	for _, r := range sel {
		if s, ok := Summary(r, metric); ok {
			maxV = math.Max(maxV, s.Median)
		}
	}
	sc := ScaleFor(metric, maxV)
	c := &barChart{
		ID: kind + "-" + slug(test) + "-" + fl + "f", Kind: kind,
		Title:    fmt.Sprintf("%s — %s, %s", MetricTitle(metric), test, flowsText(fl)),
		Subtitle: fmt.Sprintf("median with 95 %% CI, MTU %s; %s", orDash(m.defaultMTU), BetterText(metric)),
		YLabel:   MetricTitle(metric) + " (" + AxisUnit(metric, sc) + ")",
		Series:   showAll(paths),
		Note:     m.skippedNote(),
	}
	if kind == "primary" {
		c.YLabel = MetricTitle(metric) + " (" + AxisUnit(metric, sc) + ")"
	} else {
		c.YLabel = AxisUnit(metric, sc)
		if metric == result.CPUUsPerTrans {
			c.YLabel = "CPU time per transaction (" + AxisUnit(metric, sc) + ")"
		} else if metric == result.CPUPctPer100Gbit {
			c.YLabel = "host CPU (% of one core)"
		}
	}
	anyWarn := false
	for _, dp := range m.datapaths {
		var vals []bar
		any := false
		for _, p := range paths {
			r := find(sel, map[string]string{LabelDatapath: dp, LabelPath: p})
			var b bar
			if r != nil {
				if s, ok := Summary(r, metric); ok {
					b = barOf(s, sc.Div)
					any = true
					anyWarn = anyWarn || b.Warn
				}
			}
			vals = append(vals, b)
		}
		if any {
			c.Categories = append(c.Categories, show(dp))
			c.Vals = append(c.Vals, vals)
		}
		if dp == BaselineDatapath && any {
			for _, b := range vals {
				if b.OK {
					c.RefValue, c.HasRef, c.RefLabel = b.V, true, "baseline median "+Num(b.V)
				}
			}
		}
	}
	if anyWarn {
		c.Note = strings.TrimPrefix(c.Note+"; "+noteMark+" noisy or too few repeats, see Warnings", "; ")
	}
	if c.points() == 0 {
		return nil
	}
	return c
}

// latencyChart: percentiles per datapath for one path (the baseline shown
// for reference).
func (m *model) latencyChart(test, fl, path string, runs []*result.Run) *barChart {
	sel := filter(runs, map[string]string{LabelFlows: fl})
	maxV := 0.0
	for _, r := range sel {
		for _, mt := range LatencyMetrics {
			if s, ok := Summary(r, mt); ok {
				maxV = math.Max(maxV, s.Median)
			}
		}
	}
	sc := ScaleFor(result.LatencyUsP50, maxV)
	c := &barChart{
		ID: "latency-" + slug(test) + "-" + fl + "f-" + slug(path), Kind: "latency",
		Title:    fmt.Sprintf("Latency percentiles — %s, %s, %s", test, flowsText(fl), path),
		Subtitle: fmt.Sprintf("median over repeats with 95 %% CI, MTU %s; baseline is node-to-node; lower is better", orDash(m.defaultMTU)),
		YLabel:   "latency (" + sc.Unit + ")",
		Series:   []string{"p50", "p90", "p99", "p99.9"},
		Note:     m.skippedNote(),
	}
	anyWarn := false
	for _, dp := range m.datapaths {
		var r *result.Run
		if dp == BaselineDatapath {
			r = baselineRun(sel, map[string]string{LabelDatapath: dp, LabelPath: path, LabelTest: test, LabelFlows: fl, LabelMTU: m.defaultMTU})
			if r == nil {
				r = find(sel, map[string]string{LabelDatapath: dp})
			}
		} else {
			r = find(sel, map[string]string{LabelDatapath: dp, LabelPath: path})
		}
		if r == nil {
			continue
		}
		var vals []bar
		any := false
		for _, mt := range LatencyMetrics {
			var b bar
			if s, ok := Summary(r, mt); ok {
				b = barOf(s, sc.Div)
				any = true
				anyWarn = anyWarn || b.Warn
			}
			vals = append(vals, b)
		}
		if any {
			c.Categories = append(c.Categories, show(dp))
			c.Vals = append(c.Vals, vals)
		}
	}
	if anyWarn {
		c.Note = strings.TrimPrefix(c.Note+"; "+noteMark+" noisy or too few repeats, see Warnings", "; ")
	}
	if c.points() == 0 {
		return nil
	}
	return c
}

// sweepGroup is a set of runs that differ only in one label (the x axis).
type sweepGroup struct {
	key  string // the varying label
	runs []*result.Run
}

// mtuSections: runs that differ only in the mtu label, per test and flows.
func (m *model) mtuSections() []section {
	var all []*result.Run
	for i := range m.set.Runs {
		all = append(all, &m.set.Runs[i])
	}
	// Group by all labels except mtu; keep groups with several MTUs.
	groups := map[string][]*result.Run{}
	for _, r := range all {
		groups[labelsExcept(r.Labels, LabelMTU)] = append(groups[labelsExcept(r.Labels, LabelMTU)], r)
	}
	var sweep []*result.Run
	for _, k := range keys(groups) {
		if len(values(groups[k], LabelMTU)) > 1 {
			sweep = append(sweep, groups[k]...)
		}
	}
	if len(sweep) == 0 {
		return nil
	}
	s := section{ID: "mtu-sweep", Title: "MTU sweep"}
	s.Blocks = append(s.Blocks, block{Para: "Runs that differ only in the MTU. The baseline is node-to-node; the other datapaths use the path shown."})
	mtus := values(sweep, LabelMTU)
	for _, scen := range values(sweep, LabelScenario) {
		for _, test := range values(sweep, LabelTest) {
			for _, fl := range values(sweep, LabelFlows) {
				sel := filter(sweep, map[string]string{LabelTest: test, LabelFlows: fl, LabelScenario: scen})
				if len(sel) == 0 {
					continue
				}
				metric := PrimaryMetric(test)
				t := &table{Caption: fmt.Sprintf("%s, %s, %s", MetricTitle(metric), test, flowsText(fl)), Header: []string{"Datapath", "Path"}, Right: []bool{false, false}}
				for _, mtu := range mtus {
					t.Header = append(t.Header, "MTU "+mtu)
					t.Right = append(t.Right, true)
				}
				lc := &lineChart{
					ID: "mtu-" + slug(test) + "-" + fl + "f" + scenSuffix(scen), Kind: "mtu",
					Title:    fmt.Sprintf("%s vs MTU — %s, %s", MetricTitle(metric), test, flowsText(fl)),
					Subtitle: "median with 95 % CI; " + BetterText(metric),
					XLabel:   "MTU (bytes)",
				}
				maxV := 0.0
				for _, r := range sel {
					if sm, ok := Summary(r, metric); ok {
						maxV = math.Max(maxV, sm.Median)
					}
				}
				sc := ScaleFor(metric, maxV)
				lc.YLabel = MetricTitle(metric) + " (" + AxisUnit(metric, sc) + ")"
				for _, mtu := range values(sel, LabelMTU) {
					x, _ := strconv.ParseFloat(mtu, 64)
					lc.XTicks = append(lc.XTicks, x)
					lc.XTickLabels = append(lc.XTickLabels, mtu)
				}
				for i, dp := range m.datapaths {
					for _, path := range values(sel, LabelPath) {
						rs := filter(sel, map[string]string{LabelDatapath: dp, LabelPath: path})
						if len(rs) == 0 {
							continue
						}
						row := []cell{txt(show(dp)), txt(show(path))}
						ls := lineSeries{Name: show(dp), Color: palette[i%len(palette)]}
						if dp == BaselineDatapath {
							ls.Color, ls.Dashed = pathColors["node-to-node"], true
						}
						if len(values(sel, LabelPath)) > 2 && dp != BaselineDatapath {
							ls.Name = dp + " (" + path + ")"
						}
						for _, mtu := range mtus {
							r := find(rs, map[string]string{LabelMTU: mtu})
							if r == nil {
								row = append(row, txt("—"))
								continue
							}
							sm, ok := Summary(r, metric)
							row = append(row, txt(fmtSummary(metric, sm, ok)))
							if ok {
								x, err := strconv.ParseFloat(mtu, 64)
								if err == nil {
									ls.Pts = append(ls.Pts, point{X: x, V: sm.Median / sc.Div, Lo: sm.CI95Low / sc.Div, Hi: sm.CI95High / sc.Div, Warn: stats.Notable(sm)})
								}
							}
						}
						t.Rows = append(t.Rows, row)
						if len(ls.Pts) > 0 {
							lc.Series = append(lc.Series, ls)
						}
					}
				}
				s.Blocks = append(s.Blocks, block{Table: t})
				if lc.points() > 0 && len(lc.XTicks) > 0 {
					s.Blocks = append(s.Blocks, block{Charts: []chart{lc}})
				}
			}
		}
	}
	return []section{s}
}

func scenSuffix(scen string) string {
	if scen == "" || scen == "mtu-sweep" {
		return ""
	}
	return "-" + slug(scen)
}

func labelsExcept(l map[string]string, except ...string) string {
	c := map[string]string{}
	for k, v := range l {
		if indexOf(except, k) < 0 {
			c[k] = v
		}
	}
	return result.LabelKey(c)
}

// standardLabels are the matrix labels; any other label of a scenario run
// is the scenario's parameter (e.g. rules).
var standardLabels = []string{LabelDatapath, LabelPath, LabelTest, LabelFlows, LabelMTU, LabelScenario}

// scenarioSections: one section per scenario (except pure MTU sweeps);
// a parameter label (rules, …) becomes the x axis, on a log scale for rules.
func (m *model) scenarioSections() []section {
	var runs []*result.Run
	for i := range m.set.Runs {
		r := &m.set.Runs[i]
		if r.Labels[LabelScenario] != "" {
			runs = append(runs, r)
		}
	}
	var out []section
	for _, scen := range values(runs, LabelScenario) {
		sr := filter(runs, map[string]string{LabelScenario: scen})
		// The parameter: a non-standard label with several values.
		var params []string
		seen := map[string]bool{}
		for _, r := range sr {
			for k := range r.Labels {
				if indexOf(standardLabels, k) < 0 && !seen[k] {
					seen[k] = true
					params = append(params, k)
				}
			}
		}
		SortLabelKeys(params)
		param := ""
		for _, p := range params {
			if len(values(sr, p)) > 1 {
				param = p
				break
			}
		}
		if param == "" && len(values(sr, LabelMTU)) > 1 {
			continue // an MTU sweep, shown in its own section
		}
		s := section{ID: "scenario-" + slug(scen), Title: "Scenario " + scen}
		for _, test := range values(sr, LabelTest) {
			metric := PrimaryMetric(test)
			for _, fl := range values(sr, LabelFlows) {
				for _, path := range values(sr, LabelPath) {
					sel := filter(sr, map[string]string{LabelTest: test, LabelFlows: fl, LabelPath: path})
					if len(sel) == 0 {
						continue
					}
					if param == "" {
						t := &table{Caption: fmt.Sprintf("%s, %s, %s, %s", MetricTitle(metric), test, flowsText(fl), path), Header: []string{"Datapath", MetricTitle(metric), CPUMetricTitle(test)}, Right: []bool{false, true, true}}
						for _, dp := range m.datapaths {
							if r := find(sel, map[string]string{LabelDatapath: dp}); r != nil {
								s1, ok1 := Summary(r, metric)
								s2, ok2 := Summary(r, CPUMetric(test))
								t.Rows = append(t.Rows, []cell{txt(show(dp)), txt(fmtSummary(metric, s1, ok1)), txt(fmtSummary(CPUMetric(test), s2, ok2))})
							}
						}
						s.Blocks = append(s.Blocks, block{Table: t})
						if c := m.datapathBarChart("scenario", test, fl, metric, sel); c != nil {
							c.ID = "scenario-" + slug(scen) + "-" + slug(test) + "-" + fl + "f-" + slug(path)
							c.Title = fmt.Sprintf("%s — %s: %s, %s, %s", MetricTitle(metric), scen, test, flowsText(fl), path)
							s.Blocks = append(s.Blocks, block{Charts: []chart{c}})
						}
						continue
					}
					var pvals []string
					for _, pv := range values(sel, param) {
						if pv != "" {
							pvals = append(pvals, pv)
						}
					}
					t := &table{Caption: fmt.Sprintf("%s by %s, %s, %s, %s", MetricTitle(metric), param, test, flowsText(fl), path), Header: []string{"Datapath"}, Right: []bool{false}}
					for _, pv := range pvals {
						t.Header = append(t.Header, param+" "+pv)
						t.Right = append(t.Right, true)
					}
					logX := param == LabelRules
					lc := &lineChart{
						ID: "scenario-" + slug(scen) + "-" + slug(test) + "-" + fl + "f-" + slug(path), Kind: "scenario",
						Title:    fmt.Sprintf("%s vs %s — %s: %s, %s, %s", MetricTitle(metric), param, scen, test, flowsText(fl), path),
						Subtitle: "median with 95 % CI; " + BetterText(metric),
						XLabel:   param,
						LogX:     logX,
					}
					if logX {
						lc.XLabel = "rules (log scale)"
					}
					maxV := 0.0
					for _, r := range sel {
						if sm, ok := Summary(r, metric); ok {
							maxV = math.Max(maxV, sm.Median)
						}
					}
					sc := ScaleFor(metric, maxV)
					lc.YLabel = MetricTitle(metric) + " (" + AxisUnit(metric, sc) + ")"
					numeric := true
					for _, pv := range pvals {
						x, err := strconv.ParseFloat(pv, 64)
						if err != nil || (logX && x <= 0) {
							numeric = false
							break
						}
						lc.XTicks = append(lc.XTicks, x)
						lc.XTickLabels = append(lc.XTickLabels, compactCount(pv))
					}
					for i, dp := range m.datapaths {
						rs := filter(sel, map[string]string{LabelDatapath: dp})
						if len(rs) == 0 {
							continue
						}
						row := []cell{txt(show(dp))}
						ls := lineSeries{Name: show(dp), Color: palette[i%len(palette)]}
						if dp == BaselineDatapath {
							ls.Color, ls.Dashed = pathColors["node-to-node"], true
						}
						for _, pv := range pvals {
							r := find(rs, map[string]string{param: pv})
							if r == nil {
								row = append(row, txt("—"))
								continue
							}
							sm, ok := Summary(r, metric)
							row = append(row, txt(fmtSummary(metric, sm, ok)))
							if x, err := strconv.ParseFloat(pv, 64); ok && err == nil && numeric {
								ls.Pts = append(ls.Pts, point{X: x, V: sm.Median / sc.Div, Lo: sm.CI95Low / sc.Div, Hi: sm.CI95High / sc.Div})
							}
						}
						t.Rows = append(t.Rows, row)
						if len(ls.Pts) > 0 {
							lc.Series = append(lc.Series, ls)
						}
					}
					s.Blocks = append(s.Blocks, block{Table: t})
					if numeric && lc.points() > 0 {
						s.Blocks = append(s.Blocks, block{Charts: []chart{lc}})
					}
				}
			}
		}
		if len(s.Blocks) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// CPUMetricTitle is the title of the test's normalised CPU metric.
func CPUMetricTitle(test string) string { return MetricTitle(CPUMetric(test)) }

// compactCount renders 1000000 as "1M", 10000 as "10k".
func compactCount(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	switch {
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return s
}

// CellName renders labels for humans: "bridge, same-node, tcp_crr, 32 flows".
func CellName(l map[string]string) string {
	ks := keys(l)
	SortLabelKeys(ks)
	var parts []string
	for _, k := range ks {
		v := l[k]
		switch k {
		case LabelDatapath, LabelPath, LabelTest, LabelScenario:
			parts = append(parts, v)
		case LabelFlows:
			parts = append(parts, flowsText(v))
		case LabelMTU:
			parts = append(parts, "MTU "+v)
		case LabelRules:
			parts = append(parts, v+" rules")
		default:
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "(no labels)"
	}
	return strings.Join(parts, ", ")
}

func (m *model) skippedSection() section {
	s := section{ID: "skipped", Title: "Skipped"}
	if len(m.set.Skipped) == 0 {
		s.Blocks = append(s.Blocks, block{Para: "Nothing was skipped."})
		return s
	}
	t := &table{Header: []string{"What", "Reason"}}
	sk := append([]result.Skip(nil), m.set.Skipped...)
	sort.SliceStable(sk, func(i, j int) bool { return result.LabelKey(sk[i].Labels) < result.LabelKey(sk[j].Labels) })
	for _, x := range sk {
		t.Rows = append(t.Rows, []cell{txt(CellName(x.Labels)), txt(orDash(x.Reason))})
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	return s
}

// reportMetrics are the metrics whose warnings the report lists.
func reportMetrics(test string) []string {
	out := []string{PrimaryMetric(test), CPUMetric(test)}
	if !IsStream(test) {
		out = append(out, LatencyMetrics...)
	} else {
		out = append(out, result.LossPct)
	}
	return out
}

func (m *model) warningSection() section {
	s := section{ID: "warnings", Title: "Warnings"}
	var items []string
	if m.set.Interrupted {
		items = append(items, "The suite was interrupted: the set is incomplete.")
	}
	items = append(items, m.set.Warnings...)
	ranges := 0
	rangeMsg := ""
	for i := range m.set.Runs {
		r := &m.set.Runs[i]
		name := CellName(r.Labels)
		if r.Interrupted {
			items = append(items, name+": interrupted before all repeats finished")
		}
		for _, w := range r.Warnings {
			items = append(items, name+": "+w)
		}
		// One item per message, naming the metrics that have it.
		var order []string
		byMsg := map[string][]string{}
		for _, mt := range reportMetrics(r.Labels[LabelTest]) {
			sum, ok := Summary(r, mt)
			if !ok {
				continue
			}
			for _, w := range sum.Warnings {
				if stats.IsRangeNote(w) {
					ranges++
					rangeMsg = w
					continue
				}
				if _, seen := byMsg[w]; !seen {
					order = append(order, w)
				}
				byMsg[w] = append(byMsg[w], mt)
			}
		}
		for _, w := range order {
			items = append(items, fmt.Sprintf("%s — %s: %s", name, strings.Join(byMsg[w], ", "), w))
		}
	}
	if ranges > 0 {
		items = append(items, fmt.Sprintf("%d summaries have fewer than 6 repeats, so their interval is the range of the repeats: %s.", ranges, rangeMsg))
	}
	if len(items) == 0 {
		s.Blocks = append(s.Blocks, block{Para: "No warnings."})
		return s
	}
	s.Blocks = append(s.Blocks, block{Para: fmt.Sprintf("Values marked %s in the tables and charts have a warning below (thresholds: at least %d repeats, coefficient of variation at most %.0f %%, no repeat further than %.0f×MAD and %.0f %% from the median).",
		noteMark, stats.MinRepeats, 100*stats.MaxCoV, stats.OutlierFactor, 100*stats.OutlierMinDeviation)})
	s.Blocks = append(s.Blocks, block{List: items})
	return s
}

// barOf is a chart bar for a summary, scaled by div.
func barOf(s stats.Summary, div float64) bar {
	return bar{OK: true, V: s.Median / div, Lo: s.CI95Low / div, Hi: s.CI95High / div, Warn: stats.Notable(s)}
}
