package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// The section of a scenario with a shape (egress-filter, services): runs
// drawn against a size label (rules, services) on a log axis, one series
// per value of a series label (mechanism, implementation; with a variant
// label such as traversal, and the datapath, when several).

// Labels of scenario runs.
const (
	LabelMechanism      = "mechanism"
	LabelTraversal      = "traversal"
	LabelRate           = "rate"
	LabelImplementation = "implementation"
	LabelServices       = "services"
)

// scenarioShape says how a scenario's runs are drawn.
type scenarioShape struct {
	x       string // the size label on the x axis (log scale)
	xText   string // what x counts, for titles ("rules", "services")
	series  string // one line per value
	seriesH string // the table's first column header
	variant string // a further label splitting a series (dotted), or ""
	// baseline is the series value drawn dashed grey (nothing loaded).
	baseline string
	intro    string
	// pointMetrics are the per-point costs, shown first under pointLead.
	pointMetrics []string
	pointLead    string
}

var scenarioShapes = []scenarioShape{
	{
		x: LabelRules, xText: "rules", series: LabelMechanism, seriesH: "Mechanism", variant: LabelTraversal, baseline: NoneMechanism,
		intro: "Every metric against the number of deny rules (log scale), one line per mechanism (" + NoneMechanism +
			" = nothing loaded, dashed); median over repeats with its 95 % CI. Points that were too large, skipped or failed are named under the chart and in the tables.",
		pointMetrics: FilterMetrics,
		pointLead:    "Loading the filter: set-up until a denied probe is proven dropped, one update (add and remove one /32), tear-down and memory.",
	},
	{
		x: LabelServices, xText: "services", series: LabelImplementation, seriesH: "Implementation", baseline: NoneMechanism,
		intro: "Every metric against the number of services in the table (log scale; the measured service is the last one kube-proxy's KUBE-SERVICES scans), one line per implementation (" + NoneMechanism + " = no service, the client takes the backends' addresses in turn, dashed); " +
			"median over repeats with its 95 % CI. Each cell proved its path (iptables: every connection to the VIP DNATed in conntrack; eBPF: its own translations counted, no VIP and no NAT in conntrack). " +
			"Points that were skipped or failed are named under the chart and in the tables.",
		pointMetrics: ServiceMetrics,
		pointLead:    "Loading the services: time to load the table (both nodes' rules for iptables, the maps and attachments for eBPF), and to remove it.",
	},
}

// ServiceMetrics are the per-point costs of a services point.
var ServiceMetrics = []string{result.SvcSetupSeconds, result.SvcTeardownSeconds}

// shapeOf returns the shape of a scenario's runs, if one fits.
func shapeOf(sr []*result.Run) (scenarioShape, bool) {
	for _, sh := range scenarioShapes {
		if v := values(sr, sh.series); len(v) > 1 || (len(v) == 1 && v[0] != "") {
			return sh, true
		}
	}
	return scenarioShape{}, false
}

// NoneMechanism is the filter scenario's baseline: nothing loaded.
const NoneMechanism = "none"

// FilterMetrics are the per-point costs of loading a filter, in the order
// the report shows them.
var FilterMetrics = []string{
	result.FilterSetupSeconds, result.FilterUpdateAddSeconds, result.FilterUpdateRemoveSeconds,
	result.FilterTeardownSeconds, result.FilterKernelBytes, result.FilterLoaderRSSBytes,
}

// scenarioMetricTitle extends MetricTitle with the scenario's metrics.
func scenarioMetricTitle(metric string) string {
	switch metric {
	case result.FilterSetupSeconds:
		return "Set-up until enforced"
	case result.FilterUpdateAddSeconds:
		return "Update: add one CIDR"
	case result.FilterUpdateRemoveSeconds:
		return "Update: remove one CIDR"
	case result.FilterTeardownSeconds:
		return "Tear-down"
	case result.FilterKernelBytes:
		return "Kernel memory of the rules"
	case result.FilterLoaderRSSBytes:
		return "Loader peak RSS"
	case result.DatagramsReceivedPerSec:
		return "Packet rate (received)"
	case result.ThroughputBitsPerSec:
		return "Throughput (goodput)"
	case result.SvcSetupSeconds:
		return "Loading the services"
	case result.SvcTeardownSeconds:
		return "Removing the services"
	}
	return MetricTitle(metric)
}

// cellMetrics are the traffic metrics shown for one cell of a point.
func cellMetrics(test, rate string) []string {
	if result.IsStream(test) {
		out := []string{result.ThroughputBitsPerSec}
		if test == result.TestUDPStream {
			out = append(out, result.DatagramsReceivedPerSec)
		}
		if rate != "" {
			out = append(out, result.CPUPctPer100Gbit)
		}
		return append(out, result.HostCPUPct)
	}
	return []string{result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99, result.HostCPUPct}
}

// filterSeries is one line of a filter scenario chart (one table row).
type filterSeries struct {
	name  string
	match map[string]string // series, variant, datapath
	color string
	dash  bool
	dot   bool // a further traversal of the same mechanism (same colour)
}

// filterScenario is what the section's tables and charts share.
type filterScenario struct {
	sh     scenarioShape
	scen   string
	runs   []*result.Run
	skips  []result.Skip
	rules  []string
	series []filterSeries
}

func newFilterScenario(m *model, sh scenarioShape, scen string, runs []*result.Run) *filterScenario {
	fs := &filterScenario{sh: sh, scen: scen, runs: runs}
	var rules, mechs, travs, dps []string
	for _, r := range runs {
		rules = append(rules, r.Labels[sh.x])
		mechs = append(mechs, r.Labels[sh.series])
		travs = append(travs, r.Labels[sh.variant])
		dps = append(dps, r.Labels[LabelDatapath])
	}
	for _, sk := range m.set.Skipped {
		if sk.Labels[LabelScenario] != scen {
			continue
		}
		fs.skips = append(fs.skips, sk)
		if v, ok := sk.Labels[sh.x]; ok {
			rules = append(rules, v)
		}
		if v, ok := sk.Labels[sh.series]; ok {
			mechs = append(mechs, v)
		}
		if v, ok := sk.Labels[sh.variant]; ok && sh.variant != "" {
			travs = append(travs, v)
		}
	}
	fs.rules = SortValues(sh.x, rules)
	mechs = SortValues(sh.series, mechs)
	if i := indexOf(mechs, sh.baseline); i > 0 && sh.baseline != "" {
		mechs = append([]string{sh.baseline}, append(mechs[:i:i], mechs[i+1:]...)...)
	}
	travs, dps = SortValues(sh.variant, travs), SortValues(LabelDatapath, dps)
	for _, dp := range dps {
		for mi, mech := range mechs {
			for _, tr := range travs {
				match := map[string]string{sh.series: mech, LabelDatapath: dp}
				if sh.variant != "" {
					match[sh.variant] = tr
				}
				s := filterSeries{
					name:  show(mech),
					match: match,
					color: palette[mi%len(palette)],
				}
				if len(travs) > 1 {
					s.name += " (" + show(tr) + ")"
					s.dot = tr != travs[0]
				}
				if len(dps) > 1 {
					s.name = show(dp) + ": " + s.name
				}
				if sh.baseline != "" && mech == sh.baseline {
					s.color, s.dash = pathColors["node-to-node"], true
				}
				if len(filter(runs, s.match)) > 0 || fs.skipFor(s.match, "") != "" {
					fs.series = append(fs.series, s)
				}
			}
		}
	}
	return fs
}

// skipFor is the recorded reason a point was not measured ("" if it was
// not skipped); a skip without a rules label covers every rule count.
func (fs *filterScenario) skipFor(match map[string]string, rules string) string {
	for _, sk := range fs.skips {
		ok := true
		for k, v := range match {
			if sv, has := sk.Labels[k]; has && sv != v {
				ok = false
			}
		}
		if rv, has := sk.Labels[fs.sh.x]; has && rules != "" && rv != rules {
			ok = false
		}
		if ok {
			return sk.Reason
		}
	}
	return ""
}

// shortReason is the lead of a skip reason: "too large", "skipped".
func shortReason(reason string) string {
	if i := strings.Index(reason, ":"); i > 0 {
		return reason[:i]
	}
	return "skipped"
}

// pick returns the run of a series at one rule count with the most
// values of metric among runs (the per-point metrics are attached to
// every cell of the point; one cell's repeats count each value once).
func pick(runs []*result.Run, x string, match map[string]string, rules, metric string) *result.Run {
	want := map[string]string{x: rules}
	for k, v := range match {
		want[k] = v
	}
	var best *result.Run
	bestN := -1
	for _, r := range filter(runs, want) {
		if n := len(Values(r, metric)); n > bestN {
			best, bestN = r, n
		}
	}
	return best
}

// metricBlocks draws one metric of runs: a line chart against the rule
// count and a table with one row per series, one column per rule count.
func (fs *filterScenario) metricBlocks(id, caption, metric string, runs []*result.Run) (*table, *lineChart) {
	title := scenarioMetricTitle(metric)
	t := &table{Caption: title + " by " + fs.sh.xText + ", " + caption, Header: []string{fs.sh.seriesH}, Right: []bool{false}}
	for _, rv := range fs.rules {
		t.Header = append(t.Header, fs.sh.xText+" "+compactCount(rv))
		t.Right = append(t.Right, true)
	}
	sc := scaleOf(runs, metric)
	lc := &lineChart{
		ID: id, Kind: "scenario",
		Title:    fmt.Sprintf("%s vs %s — %s", title, fs.sh.xText, caption),
		Subtitle: "median with 95 % CI; " + BetterText(metric),
		XLabel:   fs.sh.xText + " (log scale)",
		YLabel:   title + " (" + AxisUnit(metric, sc) + ")",
		LogX:     true,
		AutoLogY: true,
	}
	numeric := len(fs.rules) > 0
	for _, rv := range fs.rules {
		x, err := strconv.ParseFloat(rv, 64)
		if err != nil || x <= 0 {
			numeric = false
			break
		}
		lc.XTicks = append(lc.XTicks, x)
		lc.XTickLabels = append(lc.XTickLabels, compactCount(rv))
	}
	var notes []string
	anyValue, anyWarn := false, false
	for _, s := range fs.series {
		row := []cell{txt(s.name)}
		ls := lineSeries{Name: s.name, Color: s.color, Dashed: s.dash, Dotted: s.dot}
		for _, rv := range fs.rules {
			if reason := fs.skipFor(s.match, rv); reason != "" {
				row = append(row, txt(shortReason(reason)))
				notes = append(notes, s.name+" "+compactCount(rv)+": "+shortReason(reason))
				continue
			}
			r := pick(runs, fs.sh.x, s.match, rv, metric)
			if r == nil {
				row = append(row, txt("—"))
				continue
			}
			sm, ok := Summary(r, metric)
			if !ok {
				if failedRun(r) {
					row = append(row, txt("failed"))
					notes = append(notes, s.name+" "+compactCount(rv)+": failed")
				} else {
					row = append(row, txt("—"))
				}
				continue
			}
			anyValue = true
			row = append(row, txt(fmtSummary(metric, sm, ok)))
			if x, err := strconv.ParseFloat(rv, 64); err == nil && numeric {
				warn := stats.Notable(sm)
				anyWarn = anyWarn || warn
				ls.Pts = append(ls.Pts, point{X: x, V: sm.Median / sc.Div, Lo: sm.CI95Low / sc.Div, Hi: sm.CI95High / sc.Div, Warn: warn})
			}
		}
		if !allDash(row[1:]) {
			t.Rows = append(t.Rows, row)
		}
		if len(ls.Pts) > 0 {
			lc.Series = append(lc.Series, ls)
		}
	}
	if !anyValue {
		return nil, nil
	}
	if len(notes) > 0 {
		lc.Note = "not drawn: " + strings.Join(notes, "; ")
		if runeLen(lc.Note) > 110 {
			lc.Note = fmt.Sprintf("%d points not drawn (too large, skipped or failed): see the table", len(notes))
		}
	}
	if anyWarn {
		lc.Note = strings.TrimPrefix(lc.Note+"; "+noteMark+" noisy or too few repeats, see Warnings", "; ")
	}
	if !numeric || lc.points() == 0 {
		lc = nil
	}
	return t, lc
}

// failedRun reports whether every repeat of r failed.
func failedRun(r *result.Run) bool {
	if len(r.Repeats) == 0 {
		return false
	}
	for _, rep := range r.Repeats {
		if rep.Error == "" {
			return false
		}
	}
	return true
}

// metricsBlocks renders metrics of runs as one grid of charts followed by
// the tables, under a lead paragraph.
func (fs *filterScenario) metricsBlocks(lead, idPrefix, caption string, metrics []string, runs []*result.Run) []block {
	var tables []block
	var charts []chart
	for _, mt := range metrics {
		t, lc := fs.metricBlocks(idPrefix+"-"+slug(mt), caption, mt, runs)
		if t == nil {
			continue
		}
		tables = append(tables, block{Table: t})
		if lc != nil {
			charts = append(charts, lc)
		}
	}
	if len(tables) == 0 {
		return nil
	}
	out := []block{{Para: lead}}
	if len(charts) > 0 {
		out = append(out, block{Charts: charts})
	}
	return append(out, tables...)
}

// filterScenarioSection: the set-up, update and memory costs of each
// mechanism, then every cell's traffic metrics, against the rule count.
func (m *model) filterScenarioSection(sh scenarioShape, scen string, sr []*result.Run) section {
	fs := newFilterScenario(m, sh, scen, sr)
	id := "scenario-" + slug(scen)
	s := section{ID: id, Title: "Scenario " + scen}
	s.Blocks = append(s.Blocks, block{Para: sh.intro})
	s.Blocks = append(s.Blocks, fs.metricsBlocks(sh.pointLead, id+"-point", "scenario "+scen, sh.pointMetrics, sr)...)
	for _, test := range values(sr, LabelTest) {
		for _, rate := range values(sr, LabelRate) {
			for _, fl := range values(sr, LabelFlows) {
				for _, path := range values(sr, LabelPath) {
					sel := filter(sr, map[string]string{LabelTest: test, LabelRate: rate, LabelFlows: fl, LabelPath: path})
					if len(sel) == 0 {
						continue
					}
					name := test
					if rate != "" {
						name += " at " + rateText(rate) + " offered"
					} else if result.IsStream(test) {
						name += " at maximum rate"
					}
					caption := name + ", " + flowsText(fl) + ", " + show(path)
					idp := id + "-" + slug(test) + rateSlug(rate) + "-" + fl + "f-" + slug(path)
					s.Blocks = append(s.Blocks, fs.metricsBlocks(caption+":", idp, caption, cellMetrics(test, rate), sel)...)
				}
			}
		}
	}
	return s
}

func rateSlug(rate string) string {
	if rate == "" {
		return ""
	}
	return "-rate" + slug(rate)
}

// allDash reports whether every cell is "—" (a series without the metric).
func allDash(cells []cell) bool {
	for _, c := range cells {
		if c.Text != "—" {
			return false
		}
	}
	return true
}

// rateText renders a rate label as a bit rate: "1G" → "1 Gbit/s".
func rateText(rate string) string {
	n := strings.TrimRight(rate, "kKMGT")
	if n == rate || n == "" {
		return rate + " bit/s"
	}
	return n + " " + rate[len(n):] + "bit/s"
}
