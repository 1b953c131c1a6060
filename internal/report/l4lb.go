package report

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// The section of the l4lb scenario (issue 11, seed 003): one grouped bar
// chart per cell and metric, one group per LB mode and transport, one bar
// per firewall setting.

// Labels of l4lb runs.
const (
	LabelLBMode    = "lb_mode"
	LabelTransport = "transport"
	LabelFirewall  = "firewall"
)

// l4lbMetrics are the metrics drawn for a cell of the l4lb scenario.
func l4lbMetrics(test string) []string {
	var out []string
	if IsStream(test) {
		out = append(out, result.ThroughputBitsPerSec)
	} else {
		out = append(out, result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99)
	}
	if test == "http" {
		out = append(out, result.Errors)
	}
	return append(out, "lb_node_cpu_pct", "lb_workers_cpu_pct", result.HostCPUPct)
}

// l4lbMetricTitle titles the scenario's own metrics.
func l4lbMetricTitle(metric string) string {
	switch metric {
	case "lb_node_cpu_pct":
		return "LB node CPU"
	case "lb_workers_cpu_pct":
		return "Workers' CPU"
	}
	return MetricTitle(metric)
}

// l4lbSection draws every cell's metrics by mode.
func (m *model) l4lbSection(scen string, sr []*result.Run) section {
	id := "scenario-" + slug(scen)
	s := section{ID: id, Title: "Scenario " + scen}
	s.Blocks = append(s.Blocks, block{Para: "North-south load balancing (seed 003): an external client reaches the VIP through a BPF load-balancer node in front of two workers. " +
		"Groups: LB mode (snat: replies return through the LB; dsr: the worker answers the client directly) and LB-to-worker transport (direct, vxlan); bars: host firewall off and on " +
		"(on: only the client's prefix is allowed; a second client connects during every cell and must be refused). Every cell proved its mode from the LB's and workers' counters. " +
		"Node CPU is receive processing charged to the node's network namespaces by BPF accounting plus the CPU of the processes in its pods, in % of one core over the client's run; median with 95 % CI."})
	var groups [][2]string
	for _, lb := range values(sr, LabelLBMode) {
		for _, tr := range values(sr, LabelTransport) {
			if len(filter(sr, map[string]string{LabelLBMode: lb, LabelTransport: tr})) > 0 {
				groups = append(groups, [2]string{lb, tr})
			}
		}
	}
	fws := values(sr, LabelFirewall)
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
			sel := filter(sr, map[string]string{LabelTest: test, LabelFlows: fl})
			if len(sel) == 0 {
				continue
			}
			caption := test + ", " + flowsText(fl)
			t := &table{Caption: "Scenario " + scen + ": " + caption, Header: []string{"LB mode", "Transport", "Firewall"}, Right: []bool{false, false, false}, Keys: 3}
			metrics := l4lbMetrics(test)
			for _, mt := range metrics {
				t.Header = append(t.Header, l4lbMetricTitle(mt))
				t.Right = append(t.Right, true)
			}
			var charts []chart
			for _, mt := range metrics {
				sc := scaleOf(sel, mt)
				c := &barChart{
					ID: id + "-" + slug(test) + "-" + fl + "f-" + slug(mt), Kind: "scenario",
					Title:    fmt.Sprintf("%s — %s", l4lbMetricTitle(mt), caption),
					Subtitle: "median with 95 % CI; " + BetterText(mt),
					YLabel:   l4lbMetricTitle(mt) + " (" + AxisUnit(mt, sc) + ")",
				}
				for _, fw := range fws {
					c.Series = append(c.Series, "firewall "+fw)
				}
				any := false
				for _, g := range groups {
					var vals []bar
					for _, fw := range fws {
						var b bar
						if r := find(sel, map[string]string{LabelLBMode: g[0], LabelTransport: g[1], LabelFirewall: fw}); r != nil {
							if sm, ok := Summary(r, mt); ok {
								b, any = barOf(sm, sc.Div), true
							}
						}
						vals = append(vals, b)
					}
					c.Categories = append(c.Categories, g[0]+" + "+g[1])
					c.Vals = append(c.Vals, vals)
				}
				if any {
					charts = append(charts, c)
				}
			}
			for _, g := range groups {
				for _, fw := range fws {
					r := find(sel, map[string]string{LabelLBMode: g[0], LabelTransport: g[1], LabelFirewall: fw})
					if r == nil {
						continue
					}
					row := []cell{txt(g[0]), txt(g[1]), txt(fw)}
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
	return s
}
