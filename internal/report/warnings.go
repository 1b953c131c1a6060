package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// reportMetrics are the metrics whose warnings the report lists.
func reportMetrics(test string) []string {
	out := []string{PrimaryMetric(test), CPUMetric(test)}
	if !result.IsStream(test) {
		out = append(out, LatencyMetrics...)
	} else {
		out = append(out, result.LossPct)
	}
	return out
}

// warningKind groups a warning for the aggregated count: summary warnings
// by their rule, run warnings (failed repeats, …) by their first words.
func warningKind(w string) string {
	switch {
	case stats.IsRangeNote(w):
		return "interval is the range of the repeats (fewer than 6)"
	case strings.HasPrefix(w, "only ") && strings.Contains(w, "repeat(s)"):
		return fmt.Sprintf("too few repeats (fewer than %d)", stats.MinRepeats)
	case strings.HasPrefix(w, "noisy:"):
		return fmt.Sprintf("noisy (CoV above %.0f %%)", 100*stats.MaxCoV)
	case strings.Contains(w, "far outside the rest"):
		return fmt.Sprintf("outlying repeats (more than %.0f×MAD and %.0f %% from the median)", stats.OutlierFactor, 100*stats.OutlierMinDeviation)
	case strings.HasPrefix(w, "repeat ") && strings.Contains(w, " failed"):
		return "failed repeats"
	case strings.HasPrefix(w, "service mode (") && strings.Contains(w, "CPU is not measured"):
		return "service mode: the servers' CPU is not measured"
	}
	if head, _, ok := strings.Cut(w, ":"); ok && len(head) <= 60 {
		return head
	}
	return "other"
}

// warningCount is one aggregated line: a kind and how many values (metric
// summaries) or runs have it.
type warningCount struct {
	Kind   string
	Values int // metric summaries
	Runs   int // run-level warnings
}

func (c warningCount) String() string {
	var parts []string
	if c.Values > 0 {
		parts = append(parts, plural(c.Values, "value"))
	}
	if c.Runs > 0 {
		parts = append(parts, plural(c.Runs, "run"))
	}
	return c.Kind + ": " + strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// WarningCounts aggregates the set's warnings: one line per kind with a
// count ("noisy (CoV above 10 %): 171 values"), most frequent first. The
// reports list every warning; terminals show these lines.
func WarningCounts(set *result.Set) []string {
	var out []string
	if set.Interrupted {
		out = append(out, "interrupted: the set is incomplete")
	}
	for _, c := range warningCounts(set) {
		out = append(out, c.String())
	}
	return out
}

func warningCounts(set *result.Set) []warningCount {
	by := map[string]*warningCount{}
	get := func(k string) *warningCount {
		if by[k] == nil {
			by[k] = &warningCount{Kind: k}
		}
		return by[k]
	}
	for _, w := range set.Warnings {
		get(warningKind(w)).Runs++
	}
	for i := range set.Runs {
		r := &set.Runs[i]
		if r.Interrupted {
			get("interrupted before all repeats finished").Runs++
		}
		for _, w := range r.Warnings {
			get(warningKind(w)).Runs++
		}
		for _, mt := range reportMetrics(r.Labels[LabelTest]) {
			sum, ok := Summary(r, mt)
			if !ok {
				continue
			}
			for _, w := range sum.Warnings {
				get(warningKind(w)).Values++
			}
		}
	}
	var out []warningCount
	for _, k := range keys(by) {
		out = append(out, *by[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Values+out[i].Runs > out[j].Values+out[j].Runs
	})
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
	s.Blocks = append(s.Blocks, block{Para: fmt.Sprintf("Values marked %s in the tables and charts have a warning (thresholds: at least %d repeats, coefficient of variation at most %.0f %%, no repeat further than %.0f×MAD and %.0f %% from the median). Warnings by kind:",
		noteMark, stats.MinRepeats, 100*stats.MaxCoV, stats.OutlierFactor, 100*stats.OutlierMinDeviation)})
	s.Blocks = append(s.Blocks, block{List: WarningCounts(m.set)})
	s.Blocks = append(s.Blocks, block{Para: "Every warning:", Detail: true})
	s.Blocks = append(s.Blocks, block{List: items, Detail: true})
	return s
}
