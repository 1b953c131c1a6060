package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// The section of a scenario drawn as a sweep (egress-filter, services):
// runs drawn against a size label (rules, services) on a log axis, one
// series per value of a series label (mechanism, implementation; with a
// variant label such as traversal, and the datapath, when several). The
// shape comes from the results document (result.SweepShape, written by the
// scenario itself) or, for documents written before that, from the shape
// the scenario registered for them (result.LegacyShape).

// LabelRate marks a scenario's fixed-rate cell.
const LabelRate = "rate"

// shapeFor returns how a scenario's runs are drawn: the document's own
// shape when it names the scenario, else the legacy shape that fits.
func (m *model) shapeFor(scen string, sr []*result.Run) (result.ScenarioShape, bool) {
	if sh := m.set.Shape; sh != nil && sh.Scenario == scen && sh.Valid() == "" {
		return withNewerPointMetrics(*sh, sr), true
	}
	return legacyShape(scen, sr)
}

// withNewerPointMetrics adds to a document's sweep shape the per-point
// metrics this cnibench's scenario draws (its registered shape) and the
// document did not list, when its runs measured them: a sweep written
// before the scenario drew its cluster costs (policy objects, the CNI's
// CPU) shows them too, and the scenario's titles for metrics the document
// left untitled. The document's own metrics, order and titles stay
// first.
func withNewerPointMetrics(sh result.ScenarioShape, sr []*result.Run) result.ScenarioShape {
	now, ok := result.LegacyShape(sh.Scenario)
	if !ok || sh.Sweep == nil || now.Sweep == nil || now.Sweep.X != sh.Sweep.X {
		return sh
	}
	// Titles the document lacks for metrics it lists come from the
	// scenario's shape too (a metric drawn before it had a title).
	var untitled []string
	for _, mt := range sh.Sweep.PointMetrics {
		if sh.MetricTitles[mt] == "" && now.MetricTitles[mt] != "" {
			untitled = append(untitled, mt)
		}
	}
	var extra []string
	for _, mt := range now.Sweep.PointMetrics {
		if slices.Contains(sh.Sweep.PointMetrics, mt) {
			continue
		}
		for _, r := range sr {
			if len(Values(r, mt)) > 0 {
				extra = append(extra, mt)
				break
			}
		}
	}
	if len(extra) == 0 && len(untitled) == 0 {
		return sh
	}
	sw := *sh.Sweep
	sw.PointMetrics = append(slices.Clone(sw.PointMetrics), extra...)
	sh.Sweep = &sw
	titles := maps.Clone(sh.MetricTitles)
	if titles == nil {
		titles = map[string]string{}
	}
	for _, mt := range append(untitled, extra...) {
		if _, has := titles[mt]; !has && now.MetricTitles[mt] != "" {
			titles[mt] = now.MetricTitles[mt]
		}
	}
	sh.MetricTitles = titles
	return sh
}

// legacyShape draws the runs of documents written before results carried
// their shape: with the shape their scenario registered for such
// documents (result.LegacyShape), when the runs carry its key label, as
// the report always recognised them (the first group of a categorical
// shape, the series of a sweep); runs without it (an egress-filter sweep
// of rules alone, from before its mechanisms) are drawn generically.
func legacyShape(scen string, sr []*result.Run) (result.ScenarioShape, bool) {
	sh, ok := result.LegacyShape(scen)
	if !ok {
		return result.ScenarioShape{}, false
	}
	var key string
	switch {
	case sh.Categorical != nil:
		key = sh.Categorical.Groups[0]
	case sh.Sweep != nil:
		key = sh.Sweep.Series
	}
	if v := values(sr, key); len(v) > 1 || (len(v) == 1 && v[0] != "") {
		return sh, true
	}
	return result.ScenarioShape{}, false
}

// metricTitler titles metrics in a scenario's section: the shape's own
// titles first, then the layout's.
func metricTitler(sh result.ScenarioShape, layout func(string) string) func(string) string {
	return func(metric string) string {
		if t := sh.MetricTitles[metric]; t != "" {
			return t
		}
		return layout(metric)
	}
}

// sweepMetricTitle extends MetricTitle with what the sweep layout calls
// its traffic metrics.
func sweepMetricTitle(metric string) string {
	switch metric {
	case result.DatagramsReceivedPerSec:
		return "Packet rate (received)"
	case result.ThroughputBitsPerSec:
		return "Throughput (goodput)"
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
	sh     *result.SweepShape
	title  func(metric string) string
	scen   string
	runs   []*result.Run
	skips  []result.Skip
	rules  []string
	series []filterSeries
	// header is the tables' first column header.
	header string
	// stopped are the points measured in their first repeats and then
	// stopped (stoppedMark), in the order the tables met them.
	stopped []string
}

// stoppedMark marks a value measured in a point's first repeats before
// the point stopped (a later repeat's deny not enforced, say).
const stoppedMark = "‡"

func (fs *filterScenario) noteStopped(what string) {
	if !slices.Contains(fs.stopped, what) {
		fs.stopped = append(fs.stopped, what)
	}
}

// stoppedNote is the paragraph that says what stoppedMark means here.
func (fs *filterScenario) stoppedNote() string {
	if len(fs.stopped) == 0 {
		return ""
	}
	return stoppedMark + " measured in the point's first repeats, then the point stopped (the values are those repeats'; the Checks give why): " + strings.Join(fs.stopped, "; ") + "."
}

func newFilterScenario(m *model, shape result.ScenarioShape, scen string, runs []*result.Run, o SweepOptions) *filterScenario {
	sh := shape.Sweep
	fs := &filterScenario{sh: sh, title: metricTitler(shape, sweepMetricTitle), scen: scen, runs: runs, header: sh.SeriesHeader}
	var rules, mechs, travs, dps []string
	for _, r := range runs {
		rules = append(rules, r.Labels[sh.X])
		mechs = append(mechs, r.Labels[sh.Series])
		travs = append(travs, r.Labels[sh.Variant])
		dps = append(dps, r.Labels[LabelDatapath])
	}
	for _, sk := range m.set.Skipped {
		if sk.Labels[LabelScenario] != scen {
			continue
		}
		fs.skips = append(fs.skips, sk)
		if v, ok := sk.Labels[sh.X]; ok {
			rules = append(rules, v)
		}
		if v, ok := sk.Labels[sh.Series]; ok {
			mechs = append(mechs, v)
		}
		if v, ok := sk.Labels[sh.Variant]; ok && sh.Variant != "" {
			travs = append(travs, v)
		}
	}
	fs.rules = SortValues(sh.X, rules)
	mechs = SortValues(sh.Series, mechs)
	if i := indexOf(mechs, sh.Baseline); i > 0 && sh.Baseline != "" {
		mechs = append([]string{sh.Baseline}, append(mechs[:i:i], mechs[i+1:]...)...)
	}
	travs, dps = SortValues(sh.Variant, travs), SortValues(LabelDatapath, dps)
	if len(o.DatapathOrder) > 0 {
		SortKeysBy(o.DatapathOrder, dps)
	}
	for _, dp := range dps {
		for mi, mech := range mechs {
			for _, tr := range travs {
				match := map[string]string{sh.Series: mech, LabelDatapath: dp}
				if sh.Variant != "" {
					match[sh.Variant] = tr
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
				if len(dps) > 1 || o.DatapathHeader != "" {
					s.name = show(dp) + ": " + s.name
				}
				if sh.Baseline != "" && mech == sh.Baseline {
					s.color, s.dash = pathColors["node-to-node"], true
				}
				if len(filter(runs, s.match)) > 0 || fs.skipFor(s.match, "") != "" {
					fs.series = append(fs.series, s)
				}
			}
		}
	}
	if len(dps) > 1 {
		fs.colorPerLine()
	}
	if o.DatapathHeader != "" {
		fs.header = o.DatapathHeader + ": " + sh.SeriesHeader
	}
	return fs
}

// colorPerLine gives every datapath × series value its own colour (its
// variants keep it, dotted): with several datapaths (the field's CNIs)
// a colour per series value alone would draw two CNIs' lines of one
// mechanism alike. The baseline series stays dashed.
func (fs *filterScenario) colorPerLine() {
	k, prev := -1, ""
	for i := range fs.series {
		s := &fs.series[i]
		if key := s.match[LabelDatapath] + "\x00" + s.match[fs.sh.Series]; key != prev {
			k, prev = k+1, key
		}
		s.color = palette[k%len(palette)]
	}
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
		if rv, has := sk.Labels[fs.sh.X]; has && rules != "" && rv != rules {
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
	title := fs.title(metric)
	t := &table{Caption: title + " by " + fs.sh.XText + ", " + caption, Header: []string{fs.header}, Right: []bool{false}}
	for _, rv := range fs.rules {
		t.Header = append(t.Header, fs.sh.XText+" "+compactCount(rv))
		t.Right = append(t.Right, true)
	}
	sc := scaleOf(runs, metric)
	lc := &lineChart{
		ID: id, Kind: "scenario",
		Title:    fmt.Sprintf("%s vs %s — %s", title, fs.sh.XText, caption),
		Subtitle: "median with 95 % CI; " + BetterText(metric),
		XLabel:   fs.sh.XText + " (log scale)",
		YLabel:   axisLabel(title, metric, sc),
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
			x, xerr := strconv.ParseFloat(rv, 64)
			r := pick(runs, fs.sh.X, s.match, rv, metric)
			reason := fs.skipFor(s.match, rv)
			if reason != "" {
				notes = append(notes, s.name+" "+compactCount(rv)+": "+shortReason(reason))
				if xerr == nil && numeric {
					ls.Marks = append(ls.Marks, mark{X: x, Reason: compactCount(rv) + " " + fs.sh.XText + ": " + reason})
				}
				// A point skipped after earlier repeats measured it (one
				// repeat's deny not enforced stops its later repeats):
				// what those repeats measured, then why it stopped.
				if r != nil {
					if sm, ok := Summary(r, metric); ok {
						anyValue = true
						row = append(row, txt(fmtSummary(metric, sm, ok)+" "+stoppedMark))
						fs.noteStopped(s.name + " at " + compactCount(rv) + " " + fs.sh.XText + ": " + plural(sm.N, "repeat") + ", then " + shortReason(reason))
						continue
					}
				}
				row = append(row, txt(shortReason(reason)))
				continue
			}
			if r == nil {
				row = append(row, txt("—"))
				continue
			}
			sm, ok := Summary(r, metric)
			if !ok {
				if failedRun(r) {
					row = append(row, txt("failed"))
					notes = append(notes, s.name+" "+compactCount(rv)+": failed")
					if xerr == nil && numeric {
						ls.Marks = append(ls.Marks, mark{X: x, Reason: compactCount(rv) + " " + fs.sh.XText + ": failed: " + r.Repeats[0].Error})
					}
				} else {
					row = append(row, txt("—"))
				}
				continue
			}
			anyValue = true
			row = append(row, txt(fmtSummary(metric, sm, ok)))
			if xerr == nil && numeric {
				warn := stats.Notable(sm)
				anyWarn = anyWarn || warn
				ls.Pts = append(ls.Pts, point{X: x, V: sm.Median / sc.Div, Lo: sm.CI95Low / sc.Div, Hi: sm.CI95High / sc.Div, Warn: warn})
			}
		}
		if !allDash(row[1:]) {
			t.Rows = append(t.Rows, row)
		}
		if len(ls.Pts) > 0 || len(ls.Marks) > 0 {
			lc.Series = append(lc.Series, ls)
		}
	}
	if !anyValue {
		return nil, nil
	}
	if len(notes) > 0 {
		lc.Note = "× not measured: " + strings.Join(notes, "; ")
		if runeLen(lc.Note) > 110 {
			lc.Note = fmt.Sprintf("× %d points not measured (too large, skipped or failed): see the table", len(notes))
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
func (m *model) filterScenarioSection(shape result.ScenarioShape, scen string, sr []*result.Run) section {
	return m.filterScenarioSectionWith(shape, scen, sr, SweepOptions{})
}

// filterScenarioSectionWith is filterScenarioSection with options (SweepView).
func (m *model) filterScenarioSectionWith(shape result.ScenarioShape, scen string, sr []*result.Run, o SweepOptions) section {
	fs := newFilterScenario(m, shape, scen, sr, o)
	sh := fs.sh
	id := "scenario-" + slug(scen)
	s := section{ID: id, Title: "Scenario " + scen}
	s.Blocks = append(s.Blocks, block{Para: sh.Intro})
	s.Blocks = append(s.Blocks, fs.metricsBlocks(sh.PointLead, id+"-point", "scenario "+scen, sh.PointMetrics, sr)...)
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
	if n := fs.stoppedNote(); n != "" {
		s.Blocks = append(s.Blocks[:1], append([]block{{Para: n}}, s.Blocks[1:]...)...)
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
