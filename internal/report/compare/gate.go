package compare

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// The regression gate (`compare --fail-on`): a compared cell fails when the
// whole (1 − alpha) confidence interval of its change lies past a rule's
// threshold in the rule's direction, and the change is significant at
// alpha after the Benjamini–Hochberg adjustment over every row with a
// p-value the comparison prints (q ≤ alpha; with one row q = p; two-sided
// Mann–Whitney U). Its defaults were chosen from measured error rates
// (docs/reports.md, "The gate's error rates").

// DefaultFailOn is the rule --fail-on default stands for.
const DefaultFailOn = "worse>5%"

// DefaultGateAlpha is the gate's significance level by default.
const DefaultGateAlpha = 0.05

// Rule is one --fail-on threshold.
type Rule struct {
	// Text is the rule as given.
	Text string
	// Worse: every metric with a direction fails past Limit in its worse
	// direction (lower throughput, higher latency or CPU cost).
	Worse bool
	// Missing: a cell OLD has and NEW lacks fails.
	Missing bool
	// Metric is the metric of a metric rule.
	Metric string
	// Up: a metric rule fails on an increase past +Limit; else on a
	// decrease past −Limit.
	Up bool
	// Limit is the threshold's magnitude: percent, or percentage points
	// with PP (CPU-profile shares).
	Limit float64
	PP    bool
}

var ruleRE = regexp.MustCompile(`^([A-Za-z0-9_]+)\s*([<>])\s*([+-]?)([0-9]+(?:\.[0-9]+)?)\s*(%|pp)$`)

// ParseRules parses --fail-on values: comma-separated rules of the forms
// worse>N% (also slower>N%, regression>N%), METRIC>+N% (an increase),
// METRIC<-N% (a decrease), METRIC>+Npp for CPU shares, and missing.
func ParseRules(specs []string) ([]Rule, error) {
	var out []Rule
	for _, spec := range specs {
		for _, t := range strings.Split(spec, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			r, err := parseRule(t)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, &UsageError{fmt.Sprintf("--fail-on: no rule given; e.g. --fail-on %s", DefaultFailOn)}
	}
	return out, nil
}

func parseRule(t string) (Rule, error) {
	if t == "default" {
		t = DefaultFailOn
	}
	if t == "missing" {
		return Rule{Text: t, Missing: true}, nil
	}
	bad := func(why string) error {
		return &UsageError{fmt.Sprintf("--fail-on %q: %s; write worse>5%%, METRIC>+10%% (an increase), METRIC<-5%% (a decrease), METRIC>+2pp (a CPU share) or missing", t, why)}
	}
	m := ruleRE.FindStringSubmatch(t)
	if m == nil {
		return Rule{}, bad("not a rule")
	}
	name, op, sign, num, unit := m[1], m[2], m[3], m[4], m[5]
	limit, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return Rule{}, bad("bad number")
	}
	r := Rule{Text: t, Limit: limit, PP: unit == "pp", Up: op == ">"}
	switch name {
	case "worse", "slower", "regression":
		if op != ">" || sign == "-" {
			return Rule{}, bad(name + " takes a magnitude: " + name + ">5%")
		}
		if r.PP {
			return Rule{}, bad(name + " is in percent")
		}
		r.Worse = true
		return r, nil
	}
	if (op == ">" && sign == "-") || (op == "<" && sign == "+") {
		return Rule{}, bad("the sign contradicts the comparison: > with +N, < with -N")
	}
	if r.PP != IsShare(name) {
		if r.PP {
			return Rule{}, bad("pp (percentage points) is for CPU-profile shares (cpu_share_*, cpu_incl_*)")
		}
		return Rule{}, bad("a CPU-profile share changes in percentage points: write pp")
	}
	r.Metric = name
	return r, nil
}

// GateOptions configure the gate.
type GateOptions struct {
	Rules []Rule
	// Alpha is the significance level; 0 means DefaultGateAlpha.
	Alpha float64
}

// Verdict is one gated cell and metric.
type Verdict struct {
	Labels map[string]string
	Metric string
	// Column is the NEW input (or compared value) the verdict is about.
	Column string
	Rule   string
	// Change and its interval: percent, or percentage points for shares.
	Change, Lo, Hi float64
	PP             bool
	P              float64
	// Q is the p-value's Benjamini–Hochberg q-value over the comparison's
	// family (HasQ; the gate decides on it).
	Q    float64
	HasQ bool
	// Why says, in a sentence, what was decided.
	Why string
}

// GateResult is the gate's outcome.
type GateResult struct {
	Rules []Rule
	Alpha float64
	// Confidence of the intervals judged (1 − Alpha, or the exact
	// coverage above it).
	Confidence float64
	// Failures are the cells past a rule; Unjudged the cells a rule
	// applies to but which give no verdict (too few repeats, no interval);
	// Passed counts the judged cells within every rule.
	Failures []Verdict
	Unjudged []Verdict
	Passed   int
	// Cells counts the compared cells (labels × compared input), and
	// FailedCells those with at least one failure.
	Cells, FailedCells int
	// Family counts the rows with a p-value the q-values adjust over
	// (Result.Tests).
	Family int

	// intervals are the compared cells' changes, by verdictKey, for the
	// outputs.
	intervals map[string]change
}

// Failed tells whether the gate failed.
func (g *GateResult) Failed() bool { return len(g.Failures) > 0 }

// Judged counts the judged metrics (failed or within every rule).
func (g *GateResult) Judged() int { return len(g.Failures) + g.Passed }

// RuleText is the rules as one string.
func (g *GateResult) RuleText() string {
	var ts []string
	for _, r := range g.Rules {
		ts = append(ts, r.Text)
	}
	return strings.Join(ts, ",")
}

// CheckAlpha refuses a gate significance level outside (0, 0.5), NaN
// included, with a UsageError naming --fail-alpha.
func CheckAlpha(alpha float64) error {
	if !(alpha > 0 && alpha < 0.5) {
		return &UsageError{fmt.Sprintf("--fail-alpha %g: must be between 0 and 0.5 (e.g. %g)", alpha, DefaultGateAlpha)}
	}
	return nil
}

// Gate judges every compared cell against the rules and stores the
// outcome in r.GateResult. A metric rule naming a metric the comparison
// does not have is a UsageError.
func (r *Result) Gate(o GateOptions) (*GateResult, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultGateAlpha
	}
	if err := CheckAlpha(o.Alpha); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, t := range r.Tables {
		have[t.Metric] = true
	}
	for _, rule := range o.Rules {
		if rule.Metric != "" && !have[rule.Metric] {
			var ms []string
			for m := range have {
				ms = append(ms, m)
			}
			sort.Strings(ms)
			return nil, &UsageError{fmt.Sprintf("--fail-on %s: %s is not compared (compared: %s); add it to --metrics", rule.Text, rule.Metric, strings.Join(ms, ", "))}
		}
	}
	g := &GateResult{Rules: o.Rules, Alpha: o.Alpha, Confidence: 1 - o.Alpha, Family: r.Tests, intervals: map[string]change{}}
	cells, failed := map[string]bool{}, map[string]bool{}
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			for i, c := range row.Cells {
				v := Verdict{Labels: row.Labels, Metric: t.Metric, Column: r.column(t, row, i), PP: IsShare(t.Metric), P: c.P,
					Q: c.Q, HasQ: c.HasQ, Change: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
				cells[result.LabelKey(row.Labels)+"\x00"+v.Column] = true
				var ch change
				if c.Compared {
					ch.est, ch.lo, ch.hi, ch.err = interval(row.Base.Values, c.Values, 1-g.Alpha, v.PP)
					g.intervals[verdictKey(v.Labels, v.Metric, v.Column)] = ch
				}
				g.judge(v, row.Base, c, ch)
			}
		}
	}
	for _, v := range g.Failures {
		failed[result.LabelKey(v.Labels)+"\x00"+v.Column] = true
	}
	g.Cells, g.FailedCells = len(cells), len(failed)
	sortVerdicts(g.Failures)
	sortVerdicts(g.Unjudged)
	r.GateResult = g
	return g, nil
}

// column names what cell i of a row is compared from: the NEW file, or
// the value of the compared label.
func (r *Result) column(t *Table, row *Row, i int) string {
	if r.Mode != ByFile {
		return row.Labels[string(r.Mode)]
	}
	if i+1 < len(t.Columns) {
		return t.Columns[i+1]
	}
	return r.Base
}

// change is a compared cell's change with its (1 − alpha) interval, or
// why there is none.
type change struct {
	est, lo, hi float64
	err         error
}

// judge applies every rule to one cell whose change is ch.
func (g *GateResult) judge(v Verdict, base Side, c Cell, ch change) {
	failed, judged, unjudged := false, false, false
	for _, rule := range g.Rules {
		if rule.Missing {
			if base.Present && !c.Present {
				w := v
				w.Rule, w.Why = rule.Text, "measured in OLD, missing in NEW"
				g.Failures = append(g.Failures, w)
				failed = true
			}
			continue
		}
		up, ok := rule.Up, true
		switch {
		case rule.Worse:
			switch result.Info(v.Metric).Better {
			case result.HigherIsBetter:
				up = false
			case result.LowerIsBetter:
				up = true
			default:
				ok = false // no direction: no "worse"
			}
		case rule.Metric != v.Metric:
			ok = false
		}
		if !ok || !c.Compared {
			continue
		}
		w := v
		w.Rule = rule.Text
		est, lo, hi := ch.est, ch.lo, ch.hi
		if ch.err != nil || c.TooFew || len(c.Mismatch) > 0 || c.NotTrusted != "" {
			if !unjudged {
				w.Why = "no verdict: " + noVerdictReason(base, c, ch.err, g.Alpha)
				g.Unjudged = append(g.Unjudged, w)
				unjudged = true
			}
			continue
		}
		w.Change, w.Lo, w.Hi = est, lo, hi
		judged = true
		past := (up && lo > rule.Limit) || (!up && hi < -rule.Limit)
		if past && g.significant(c) {
			sign, unit := "+", "%"
			if !up {
				sign = "-"
			}
			if rule.PP {
				unit = "pp"
			}
			w.Why = fmt.Sprintf("past %s%g %s (%s, %s)", sign, rule.Limit, unit, rule.Text, pqText(c))
			g.Failures = append(g.Failures, w)
			failed = true
		}
	}
	if judged && !failed {
		g.Passed++
	}
}

// significant tells whether the gate takes c's change as shown: its
// q-value over the comparison's family at most alpha. A cell without a
// q-value has no p-value either and is never significant.
func (g *GateResult) significant(c Cell) bool {
	return c.HasQ && c.Q <= g.Alpha
}

// pqText is a cell's p-value and, when it has one, its q-value:
// "p=0.008 q=0.024".
func pqText(c Cell) string {
	if !c.HasQ {
		return report.PValue(c.P)
	}
	return report.PValue(c.P) + " " + qText(c)
}

// interval is the change NEW/OLD in percent (or the shift in points)
// with its conf interval.
func interval(old, new []float64, conf float64, pp bool) (est, lo, hi float64, err error) {
	if pp {
		est, lo, hi, _, err = stats.ShiftInterval(old, new, conf)
		return est, lo, hi, err
	}
	ch, err := stats.ChangeInterval(old, new, conf)
	if err != nil {
		return 0, 0, 0, err
	}
	return 100 * (ch.Ratio - 1), 100 * (ch.Lo - 1), 100 * (ch.Hi - 1), nil
}

func noVerdictReason(base Side, c Cell, err error, alpha float64) string {
	if len(c.Mismatch) > 0 {
		return "not the same measurement: " + strings.Join(c.Mismatch, ", ")
	}
	if c.NotTrusted != "" {
		return c.NotTrusted
	}
	if c.TooFew || (err != nil && strings.Contains(err.Error(), "repeats")) {
		return stats.TooFewMessage(base.Summary.N, c.Summary.N, alpha)
	}
	return err.Error()
}

func intervalText(v Verdict) string {
	if v.PP {
		return fmt.Sprintf("[%+.1f, %+.1f] pp", v.Lo, v.Hi)
	}
	return fmt.Sprintf("[%+.1f %%, %+.1f %%]", v.Lo, v.Hi)
}

// ChangeText is a verdict's change with its interval, e.g. "-9.8 % [-12.1 %, -7.5 %]".
func (v Verdict) ChangeText() string {
	if math.IsNaN(v.Change) {
		return "—"
	}
	if v.PP {
		return fmt.Sprintf("%+.1f pp %s", v.Change, intervalText(v))
	}
	return fmt.Sprintf("%+.1f %% %s", v.Change, intervalText(v))
}

func sortVerdicts(vs []Verdict) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := result.LabelKey(vs[i].Labels), result.LabelKey(vs[j].Labels)
		if a != b {
			return a < b
		}
		return vs[i].Metric < vs[j].Metric
	})
}
