package report

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// The sections of categorical scenarios (l4lb, encryption): one grouped
// bar chart per cell and metric, one group per combination of the group
// labels (e.g. LB mode + transport), one bar per value of the series label
// (e.g. firewall), and a table per cell.

// Labels of those scenarios.
const (
	LabelLBMode     = "lb_mode"
	LabelTransport  = "transport"
	LabelFirewall   = "firewall"
	LabelEncryption = "encryption"
	LabelCipher     = "cipher"
	LabelPodMTU     = "pod_mtu"
)

// categoricalShape says how a categorical scenario is drawn.
type categoricalShape struct {
	groups  []string // labels whose combination is a group (x axis)
	headers []string // their table headers
	series  string   // one bar per value
	seriesH string
	intro   string
	metrics func(test string) []string
}

var l4lbShape = categoricalShape{
	groups: []string{LabelLBMode, LabelTransport}, headers: []string{"LB mode", "Transport"},
	series: LabelFirewall, seriesH: "Firewall",
	intro: "North-south load balancing (seed 003): an external client reaches the VIP through a BPF load-balancer node in front of two workers. " +
		"Groups: LB mode (snat: replies return through the LB; dsr: the worker answers the client directly) and LB-to-worker transport (direct, vxlan); bars: host firewall off and on " +
		"(on: only the client's prefix is allowed; a second client connects during every cell and must be refused). Every cell proved its mode from the LB's and workers' counters. " +
		"Node CPU is receive processing charged to the node's network namespaces by BPF accounting plus the CPU of the processes in its pods, in % of one core over the client's run; median with 95 % CI.",
	metrics: func(test string) []string {
		var out []string
		if result.IsStream(test) {
			out = append(out, result.ThroughputBitsPerSec)
		} else {
			out = append(out, result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99)
		}
		if test == result.TestHTTP {
			out = append(out, result.Errors)
		}
		return append(out, "lb_node_cpu_pct", "lb_workers_cpu_pct", result.HostCPUPct)
	},
}

var encryptShape = categoricalShape{
	groups: []string{LabelEncryption, LabelCipher}, headers: []string{"Encryption", "Cipher"},
	series: LabelPodMTU, seriesH: "Pod MTU",
	intro: "Pod traffic between the nodes in clear and encrypted (seeds 000 and 002); bars: the pods' MTU lowered by the tunnel's overhead, or left at the wire's (the misconfiguration seed 002 warns about). " +
		"Userspace implementations are labelled as such: their crypto runs in a process and every packet crosses a TUN device, so their costs are not the kernel's. " +
		"Every cell carries its proof from a capture on node 2's wire: encrypted cells saw the tunnel's packets and never the payload marker; the unencrypted ones saw the marker (negative control). Median with 95 % CI.",
	metrics: func(test string) []string {
		if result.IsStream(test) {
			return []string{result.ThroughputBitsPerSec, result.CPUPctPer100Gbit, result.HostCPUPct, "wire_marker_frames"}
		}
		return []string{result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99, result.HostCPUPct}
	},
}

// categoricalShapeOf returns the shape of a scenario's runs, if one fits.
func categoricalShapeOf(sr []*result.Run) (categoricalShape, bool) {
	for _, sh := range []categoricalShape{l4lbShape, encryptShape} {
		if v := values(sr, sh.groups[0]); len(v) > 1 || (len(v) == 1 && v[0] != "") {
			return sh, true
		}
	}
	return categoricalShape{}, false
}

// categoricalMetricTitle titles the scenarios' own metrics.
func categoricalMetricTitle(metric string) string {
	switch metric {
	case "lb_node_cpu_pct":
		return "LB node CPU"
	case "lb_workers_cpu_pct":
		return "Workers' CPU"
	case "wire_marker_frames":
		return "Frames with the payload marker in clear"
	}
	return MetricTitle(metric)
}

// categoricalSection draws every cell's metrics by group and series.
func (m *model) categoricalSection(sh categoricalShape, scen string, sr []*result.Run) section {
	if len(values(sr, LabelDatapath)) > 1 {
		// Several datapaths: each group per datapath.
		sh.groups = append([]string{LabelDatapath}, sh.groups...)
		sh.headers = append([]string{"Datapath"}, sh.headers...)
	}
	id := "scenario-" + slug(scen)
	s := section{ID: id, Title: "Scenario " + scen}
	s.Blocks = append(s.Blocks, block{Para: sh.intro})
	var groups [][]string
	var walk func(prefix []string, i int)
	walk = func(prefix []string, i int) {
		if i == len(sh.groups) {
			match := map[string]string{}
			for k, v := range prefix {
				match[sh.groups[k]] = v
			}
			if len(filter(sr, match)) > 0 {
				groups = append(groups, append([]string(nil), prefix...))
			}
			return
		}
		for _, v := range values(sr, sh.groups[i]) {
			walk(append(prefix, v), i+1)
		}
	}
	walk(nil, 0)
	match := func(g []string, sv string) map[string]string {
		mm := map[string]string{sh.series: sv}
		for k, v := range g {
			mm[sh.groups[k]] = v
		}
		return mm
	}
	svals := values(sr, sh.series)
	var skipped []string
	for _, sk := range m.set.Skipped {
		if sk.Labels[LabelScenario] == scen {
			skipped = append(skipped, CellName(sk.Labels)+": "+sk.Reason)
		}
	}
	if len(skipped) > 0 {
		s.Blocks = append(s.Blocks, block{Para: "Not measured: " + strings.Join(skipped, "; ")})
	}
	for _, test := range values(sr, LabelTest) {
		for _, fl := range values(sr, LabelFlows) {
			for _, rate := range values(sr, LabelRate) {
				sel := filter(sr, map[string]string{LabelTest: test, LabelFlows: fl, LabelRate: rate})
				if len(sel) == 0 {
					continue
				}
				caption := test + ", " + flowsText(fl)
				if rate != "" {
					caption += " at " + rateText(rate) + " offered"
				}
				metrics := sh.metrics(test)
				t := &table{Caption: "Scenario " + scen + ": " + caption, Keys: len(sh.groups) + 1}
				t.Header = append(append(t.Header, sh.headers...), sh.seriesH)
				for range len(sh.groups) + 1 {
					t.Right = append(t.Right, false)
				}
				for _, mt := range metrics {
					t.Header = append(t.Header, categoricalMetricTitle(mt))
					t.Right = append(t.Right, true)
				}
				var charts []chart
				for _, mt := range metrics {
					sc := scaleOf(sel, mt)
					c := &barChart{
						ID: id + "-" + slug(test) + "-" + fl + "f" + rateSlug(rate) + "-" + slug(mt), Kind: "scenario",
						Title:    fmt.Sprintf("%s — %s", categoricalMetricTitle(mt), caption),
						Subtitle: "median with 95 % CI; " + BetterText(mt),
						YLabel:   categoricalMetricTitle(mt) + " (" + AxisUnit(mt, sc) + ")",
					}
					for _, sv := range svals {
						c.Series = append(c.Series, sh.series+" "+sv)
					}
					any := false
					for _, g := range groups {
						var vals []bar
						for _, sv := range svals {
							var b bar
							if r := find(sel, match(g, sv)); r != nil {
								if sm, ok := Summary(r, mt); ok {
									b, any = barOf(sm, sc.Div), true
								}
							}
							vals = append(vals, b)
						}
						c.Categories = append(c.Categories, strings.Join(g, " + "))
						c.Vals = append(c.Vals, vals)
					}
					if any {
						charts = append(charts, c)
					}
				}
				for _, g := range groups {
					for _, sv := range svals {
						r := find(sel, match(g, sv))
						if r == nil {
							continue
						}
						var row []cell
						for _, v := range g {
							row = append(row, txt(v))
						}
						row = append(row, txt(sv))
						for _, mt := range metrics {
							sm, ok := Summary(r, mt)
							if !ok && failedRun(r) {
								row = append(row, txt("failed"))
								continue
							}
							row = append(row, txt(fmtSummary(mt, sm, ok)))
						}
						t.Rows = append(t.Rows, row)
					}
				}
				s.Blocks = append(s.Blocks, block{Para: caption + ":"})
				if len(charts) > 0 {
					s.Blocks = append(s.Blocks, block{Charts: charts})
				}
				s.Blocks = append(s.Blocks, block{Table: t})
			}
		}
	}
	return s
}
