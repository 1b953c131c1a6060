// Package report renders a cnibench/results/v1 set as a self-contained
// HTML page (inline SVG charts, no external resources; no scripts except
// the CPU flamegraphs' own, see Flamegraphs), as Markdown for pasting into
// a GitHub issue, and as a terminal table. All three show the same tables;
// the output is deterministic (sorted keys, no timestamps other than the
// set's own).
package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
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
	// Detail blocks are left out of the terminal output (which points to
	// the HTML and Markdown reports for them).
	Detail bool
	// Raw is trusted HTML (rendered flamegraphs), shown only in the HTML.
	Raw string
	// Links are shown only in Markdown, as a list of links.
	Links []link
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
	// Keys leading columns identify a row (repeated when the terminal
	// table is split to fit the width; default 1).
	Keys int
	// Records: on a terminal, a table too wide is shown as one record per
	// row instead (for tables of long texts).
	Records bool
}

type cell struct {
	Text  string
	Class string // CSS class (grades); colours the terminal output too
}

func txt(s string) cell { return cell{Text: s} }

const noteMark = "*"

// build assembles the document for set; fg (may be nil) adds the
// flamegraphs.
func build(set *result.Set, fg *Flamegraphs) *document {
	m := newModel(set)
	m.flames = fg
	d := &document{Title: "cnibench report"}
	d.Subtitle = subtitle(set)
	d.Sections = append(d.Sections, m.summarySection())
	if s, ok := m.findingsSection(); ok {
		d.Sections = append(d.Sections, s)
	}
	d.Sections = append(d.Sections, m.hostSection())
	d.Sections = append(d.Sections, m.datapathSection())
	for _, test := range m.tests {
		if s, ok := m.testSection(test); ok {
			d.Sections = append(d.Sections, s)
		}
	}
	if s, ok := m.cpuSection(); ok {
		d.Sections = append(d.Sections, s)
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
	if set.Config["backend"] == "kubernetes" {
		parts = append(parts, "on Kubernetes cluster "+orDash(set.Config["cluster"])+" (driven from "+orDash(set.Host.Hostname)+")")
	} else if set.Host.Hostname != "" {
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
	if n := InterferenceNote(m.set); n != "" {
		s.Blocks = append(s.Blocks, block{Para: n})
	}
	gts := m.grades()
	if len(gts) == 0 {
		s.Blocks = append(s.Blocks, block{Para: m.noGradesNote()})
		s.Blocks = append(s.Blocks, m.whyBlocks()...)
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
				row = append(row, cell{Text: c.text(), Class: c.class()})
			}
			t.Rows = append(t.Rows, row)
		}
		s.Blocks = append(s.Blocks, block{Table: t})
	}
	s.Blocks = append(s.Blocks, m.whyBlocks()...)
	s.Blocks = append(s.Blocks, block{Para: GradeExplanation()})
	s.Blocks = append(s.Blocks, m.leftOutBlocks()...)
	return s
}

// noGradesNote says in one line why there is no graded summary and how to
// get one.
func (m *model) noGradesNote() string {
	if !m.measured(BaselineDatapath) {
		return NoBaselineNote
	}
	return "No graded summary: the baseline has no runs that match the other datapaths' tests, flow counts and MTU."
}

// NoBaselineNote explains a missing graded summary (a subset run without
// the baseline datapath); the suite prints it too.
const NoBaselineNote = "No graded summary: the \"baseline\" datapath was not run (cnibench suite --datapaths baseline,…)."

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
	t := &table{Header: []string{"Datapath", "Description", "Packet path", "Status"}, Records: true}
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
	if result.IsStream(test) {
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
	t := &table{Header: []string{"Flows", "Datapath", "Path"}, Right: []bool{true, false, false}, Keys: 3}
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

// barOf is a chart bar for a summary, scaled by div.
func barOf(s stats.Summary, div float64) bar {
	return bar{OK: true, V: s.Median / div, Lo: s.CI95Low / div, Hi: s.CI95High / div, Warn: stats.Notable(s)}
}
