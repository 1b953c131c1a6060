package report

import (
	"fmt"
	"strconv"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// The MTU sweep and scenario sections: runs that differ in one label
// (the MTU, or a scenario's parameter such as rules) drawn as line charts.

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
				sc := scaleOf(sel, metric)
				lc.YLabel = axisLabel(MetricTitle(metric), metric, sc)
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
		if sh, ok := m.shapeFor(scen, sr); ok {
			if sh.Categorical != nil {
				out = append(out, m.categoricalSection(sh, scen, sr))
			} else {
				out = append(out, m.filterScenarioSection(sh, scen, sr))
			}
			continue
		}
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
					sc := scaleOf(sel, metric)
					lc.YLabel = axisLabel(MetricTitle(metric), metric, sc)
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
