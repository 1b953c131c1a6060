package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// The sections of categorical scenarios (l4lb, encryption): one grouped
// bar chart per cell and metric, one group per combination of the group
// labels (e.g. LB mode + transport), one bar per value of the series label
// (e.g. firewall), and a table per cell. The shape comes from the results
// document (result.CategoricalShape, written by the scenario itself) or,
// for documents written before that, from the shape the scenario
// registered for them (result.LegacyShape, scenario.go's legacyShape).

// categoricalMetrics are the metrics shown for a test: the shape's, else
// the sweep layout's traffic metrics.
func categoricalMetrics(sh *result.CategoricalShape, test, rate string) []string {
	if v, ok := sh.Metrics[test]; ok {
		return v
	}
	return cellMetrics(test, rate)
}

// categoricalSection draws every cell's metrics by group and series.
func (m *model) categoricalSection(shape result.ScenarioShape, scen string, sr []*result.Run) section {
	sh := shape.Categorical
	title := metricTitler(shape, MetricTitle)
	// Copies: the document's shape is not changed.
	groups, headers := slices.Clone(sh.Groups), slices.Clone(sh.GroupHeaders)
	if len(values(sr, LabelDatapath)) > 1 {
		// Several datapaths: each group per datapath.
		groups = append([]string{LabelDatapath}, groups...)
		headers = append([]string{"Datapath"}, headers...)
	}
	id := "scenario-" + slug(scen)
	s := section{ID: id, Title: "Scenario " + scen}
	s.Blocks = append(s.Blocks, block{Para: sh.Intro})
	var combos [][]string
	var walk func(prefix []string, i int)
	walk = func(prefix []string, i int) {
		if i == len(groups) {
			match := map[string]string{}
			for k, v := range prefix {
				match[groups[k]] = v
			}
			if len(filter(sr, match)) > 0 {
				combos = append(combos, append([]string(nil), prefix...))
			}
			return
		}
		for _, v := range values(sr, groups[i]) {
			walk(append(prefix, v), i+1)
		}
	}
	walk(nil, 0)
	match := func(g []string, sv string) map[string]string {
		mm := map[string]string{sh.Series: sv}
		for k, v := range g {
			mm[groups[k]] = v
		}
		return mm
	}
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
				metrics := categoricalMetrics(sh, test, rate)
				// The series this cell has: a test without the series
				// label (apps' FTP and scp, which have no keep-alive
				// setting) gets one bar per group, not empty ones.
				svals := values(sel, sh.Series)
				t := &table{Caption: "Scenario " + scen + ": " + caption, Keys: len(groups) + 1}
				t.Header = append(append(t.Header, headers...), sh.SeriesHeader)
				for range len(groups) + 1 {
					t.Right = append(t.Right, false)
				}
				for _, mt := range metrics {
					t.Header = append(t.Header, title(mt))
					t.Right = append(t.Right, true)
				}
				var charts []chart
				for _, mt := range metrics {
					sc := scaleOf(sel, mt)
					c := &barChart{
						ID: id + "-" + slug(test) + "-" + fl + "f" + rateSlug(rate) + "-" + slug(mt), Kind: "scenario",
						Title:    fmt.Sprintf("%s — %s", title(mt), caption),
						Subtitle: "median with 95 % CI; " + BetterText(mt),
						YLabel:   axisLabel(title(mt), mt, sc),
					}
					for _, sv := range svals {
						if sv == "" {
							sv = "—"
						}
						c.Series = append(c.Series, sh.Series+" "+sv)
					}
					any := false
					for _, g := range combos {
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
				for _, g := range combos {
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
