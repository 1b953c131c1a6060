package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// The per-test bar charts: primary metric, CPU cost and latency
// percentiles per datapath.

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
	sc := scaleOf(sel, metric)
	c := &barChart{
		ID: kind + "-" + slug(test) + "-" + fl + "f", Kind: kind,
		Title:    fmt.Sprintf("%s — %s, %s", MetricTitle(metric), test, flowsText(fl)),
		Subtitle: fmt.Sprintf("median with 95 %% CI, MTU %s; %s", orDash(m.defaultMTU), BetterText(metric)),
		YLabel:   axisLabel(MetricTitle(metric), metric, sc),
		Series:   showAll(paths),
		Note:     m.skippedNote(),
	}
	if kind == "primary" {
		c.YLabel = axisLabel(MetricTitle(metric), metric, sc)
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
	sc := scaleOf(sel, result.LatencyUsP50, LatencyMetrics...)
	c := &barChart{
		ID: "latency-" + slug(test) + "-" + fl + "f-" + slug(path), Kind: "latency",
		Title:    fmt.Sprintf("Latency percentiles — %s, %s, %s", test, flowsText(fl), path),
		Subtitle: fmt.Sprintf("median over repeats with 95 %% CI, MTU %s; baseline is node-to-node; lower is better", orDash(m.defaultMTU)),
		YLabel:   "latency (" + sc.Unit + ")",
		Series:   []string{"p50", "p90", "p99", "p99.9"},
		Note:     m.skippedNote(),
		LogY:     true,
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

// scaleOf is the display scale of metric for the largest median among runs
// of the metrics given (metric itself when none are).
func scaleOf(runs []*result.Run, metric string, of ...string) Scale {
	if len(of) == 0 {
		of = []string{metric}
	}
	maxV := 0.0
	for _, r := range runs {
		for _, mt := range of {
			if s, ok := Summary(r, mt); ok {
				maxV = math.Max(maxV, s.Median)
			}
		}
	}
	return ScaleFor(metric, maxV)
}
