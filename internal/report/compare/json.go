package compare

import (
	"encoding/json"
	"io"
	"math"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// JSON output (schema cnibench/compare/v1). Numbers that are undefined
// (a delta against a zero median) are left out instead of being NaN.

// SchemaCompare identifies the JSON output of compare.
const SchemaCompare = "cnibench/compare/v1"

type jsonResult struct {
	Schema    string      `json:"schema"`
	By        Mode        `json:"by"`
	Base      string      `json:"base"`
	Inputs    []string    `json:"inputs"`
	Tables    []jsonTable `json:"tables"`
	Unmatched int         `json:"unmatched,omitempty"`
	Notes     []string    `json:"notes"`
	Gate      *jsonGate   `json:"gate,omitempty"`
}

// jsonGate is the regression gate's outcome (compare --fail-on).
type jsonGate struct {
	FailOn     string  `json:"fail_on"`
	Alpha      float64 `json:"alpha"`
	Confidence float64 `json:"confidence"`
	Failed     bool    `json:"failed"`
	Passed     int     `json:"passed"`
	// Family counts the rows whose q-values the gate decided on.
	Family   int           `json:"family"`
	Failures []jsonVerdict `json:"failures"`
	Unjudged []jsonVerdict `json:"unjudged,omitempty"`
}

type jsonVerdict struct {
	Labels map[string]string `json:"labels"`
	Metric string            `json:"metric"`
	Column string            `json:"column"`
	Rule   string            `json:"rule"`
	Change *float64          `json:"change,omitempty"` // percent, or pp for shares
	Lo     *float64          `json:"lo,omitempty"`
	Hi     *float64          `json:"hi,omitempty"`
	Unit   string            `json:"unit,omitempty"`
	P      *float64          `json:"p,omitempty"`
	Q      *float64          `json:"q,omitempty"`
	Why    string            `json:"why"`
}

func jsonGateOf(g *GateResult) *jsonGate {
	if g == nil {
		return nil
	}
	conv := func(vs []Verdict) []jsonVerdict {
		out := []jsonVerdict{}
		for _, v := range vs {
			unit := "%"
			if v.PP {
				unit = "pp"
			}
			jv := jsonVerdict{Labels: v.Labels, Metric: v.Metric, Column: v.Column, Rule: v.Rule,
				Change: finite(v.Change), Lo: finite(v.Lo), Hi: finite(v.Hi), Unit: unit, P: finite(v.P), Why: v.Why}
			if v.HasQ {
				jv.Q = finite(v.Q)
			}
			out = append(out, jv)
		}
		return out
	}
	return &jsonGate{FailOn: g.RuleText(), Alpha: g.Alpha, Confidence: g.Confidence, Failed: g.Failed(), Passed: g.Passed,
		Family: g.Family, Failures: conv(g.Failures), Unjudged: conv(g.Unjudged)}
}

type jsonTable struct {
	Metric  string    `json:"metric"`
	Unit    string    `json:"unit"`
	Better  string    `json:"better"`
	Columns []string  `json:"columns"`
	Rows    []jsonRow `json:"rows"`
	// Sweep and Curves: a sweep's points (curves.go).
	Sweep  *Sweep      `json:"sweep,omitempty"`
	Curves []jsonCurve `json:"curves,omitempty"`
}

// jsonCurve is one curve's summary for one compared column (x values).
type jsonCurve struct {
	Labels   map[string]string `json:"labels"`
	Column   string            `json:"column"`
	Compared []string          `json:"compared"`
	Worse    []string          `json:"worse,omitempty"`
	Better   []string          `json:"better,omitempty"`
	Changed  []string          `json:"changed,omitempty"`
	OneSide  []string          `json:"one_side,omitempty"`
	Alpha    float64           `json:"alpha"`
	Summary  string            `json:"summary"`
}

type jsonRow struct {
	Labels     map[string]string `json:"labels"`
	BaseLabels map[string]string `json:"base_labels,omitempty"`
	Base       *stats.Summary    `json:"base"`
	Compared   []jsonCell        `json:"compared"`
}

type jsonCell struct {
	Summary     *stats.Summary `json:"summary"`
	DeltaPct    *float64       `json:"delta_pct,omitempty"`
	DeltaPP     *float64       `json:"delta_pp,omitempty"` // CPU-profile shares: change in percentage points
	P           *float64       `json:"p,omitempty"`
	Alpha       float64        `json:"alpha,omitempty"`
	Significant bool           `json:"significant"`
	Change      string         `json:"change,omitempty"` // "better", "worse", "none"
	Warnings    []string       `json:"warnings,omitempty"`
	// A sweep's point: the ratio with its 95 % interval.
	Ratio   *float64 `json:"ratio,omitempty"`
	RatioLo *float64 `json:"ratio_lo,omitempty"`
	RatioHi *float64 `json:"ratio_hi,omitempty"`
	// Q is the Benjamini–Hochberg q-value over every row with a p-value
	// of the output (absent where no p-value is printed).
	Q *float64 `json:"q,omitempty"`
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func betterName(b result.Better) string {
	switch b {
	case result.HigherIsBetter:
		return "higher"
	case result.LowerIsBetter:
		return "lower"
	}
	return "neutral"
}

// WriteJSON writes the comparison as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	out := jsonResult{Schema: SchemaCompare, By: r.Mode, Base: r.Base, Inputs: r.Inputs, Unmatched: r.Unmatched, Notes: r.notes(), Gate: jsonGateOf(r.GateResult)}
	for _, t := range r.Tables {
		info := result.Info(t.Metric)
		jt := jsonTable{Metric: t.Metric, Unit: info.Unit, Better: betterName(info.Better), Columns: t.Columns}
		for _, row := range t.Rows {
			jr := jsonRow{Labels: row.Labels, BaseLabels: row.BaseLabels}
			if row.Base.Present {
				s := row.Base.Summary
				jr.Base = &s
			}
			for _, c := range row.Cells {
				var jc jsonCell
				if c.Present {
					s := c.Summary
					jc.Summary = &s
				}
				if c.Compared {
					jc.DeltaPct, jc.P, jc.Alpha, jc.Significant, jc.Warnings = finite(c.DeltaPct), finite(c.P), c.Alpha, c.Significant, c.Warnings
					if IsShare(t.Metric) {
						jc.DeltaPP = finite(c.DeltaPP)
					}
					switch c.Better {
					case 1:
						jc.Change = "better"
					case -1:
						jc.Change = "worse"
					default:
						jc.Change = "none"
					}
				}
				if c.HasQ {
					jc.Q = finite(c.Q)
				}
				if t.Sweep != nil && c.Compared {
					jc.Ratio, jc.RatioLo, jc.RatioHi = finite(c.Change.Ratio), finite(c.Change.Lo), finite(c.Change.Hi)
				}
				jr.Compared = append(jr.Compared, jc)
			}
			jt.Rows = append(jt.Rows, jr)
		}
		if t.Sweep != nil {
			jt.Sweep = t.Sweep
			for _, c := range t.Curves {
				jt.Curves = append(jt.Curves, jsonCurve{Labels: c.Labels, Column: t.Columns[c.Column+1], Compared: c.Compared,
					Worse: c.Worse, Better: c.Better, Changed: c.Changed, OneSide: c.OneSide, Alpha: c.Alpha, Summary: c.Text(t.Sweep.X)})
			}
		}
		out.Tables = append(out.Tables, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
