package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// family builds OLD and NEW with one tcp_rr cell per factor (flows=1, 2,
// …): NEW's repeats are OLD's times the factor. Five repeats a side: a
// factor that separates the samples completely gives the smallest exact
// two-sided Mann–Whitney p of 5 + 5 repeats, 2/252; factor 1 gives p = 1.
func family(t *testing.T, factors ...float64) *Result {
	t.Helper()
	base := []float64{100, 101, 99, 100.5, 99.5}
	var olds, news []result.Run
	for i, f := range factors {
		l := map[string]string{"test": "tcp_rr", "flows": fmt.Sprint(i + 1)}
		var scaled []float64
		for _, v := range base {
			scaled = append(scaled, v*f)
		}
		olds = append(olds, run(l, result.TransPerSec, base...))
		news = append(news, run(l, result.TransPerSec, scaled...))
	}
	r, err := Compare([]Input{{"old.json", set(olds...)}, {"new.json", set(news...)}}, Options{Metrics: []string{result.TransPerSec}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const pSeparated = 2.0 / 252 // 0.00794

// The q-values of a compare output are Benjamini–Hochberg over every row
// it prints a p-value for, and each row prints its q right after its p.
func TestQValuesOverTheOutput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		factors []float64
		// wantQ per row, and the text each row's change prints.
		wantQ    []float64
		wantText []string
	}{
		{"one row: q = p", []float64{0.9}, []float64{pSeparated},
			[]string{"-10.0% (p=0.008 q=0.008 n=5)"}},
		// One change among four rows: q = 4·p = 0.032 (≤ 0.05).
		{"one change of four", []float64{0.9, 1, 1, 1}, []float64{4 * pSeparated, 1, 1, 1},
			[]string{"-10.0% (p=0.008 q=0.032 n=5)", "~ (p=1.000 q=1.000 n=5)", "~ (p=1.000 q=1.000 n=5)", "~ (p=1.000 q=1.000 n=5)"}},
		// One change among eight: q = 8·p = 0.063 (> 0.05), p still 0.008.
		{"one change of eight", []float64{0.9, 1, 1, 1, 1, 1, 1, 1}, []float64{8 * pSeparated, 1, 1, 1, 1, 1, 1, 1},
			[]string{"-10.0% (p=0.008 q=0.063 n=5)", "~ (p=1.000 q=1.000 n=5)"}},
		// Four changes among eight: the fourth smallest p at rank 4 gives
		// q = 8·p/4 = 0.016 for all four.
		{"four changes of eight", []float64{0.9, 1.1, 0.8, 1.2, 1, 1, 1, 1}, []float64{2 * pSeparated, 2 * pSeparated, 2 * pSeparated, 2 * pSeparated, 1, 1, 1, 1},
			[]string{"-10.0% (p=0.008 q=0.016 n=5)", "+10.0% (p=0.008 q=0.016 n=5)", "-20.0% (p=0.008 q=0.016 n=5)", "+20.0% (p=0.008 q=0.016 n=5)", "~ (p=1.000 q=1.000 n=5)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := family(t, tc.factors...)
			if r.Tests != len(tc.factors) {
				t.Errorf("family of %d rows, want %d", r.Tests, len(tc.factors))
			}
			rows := r.Tables[0].Rows
			for i, row := range rows {
				c := row.Cells[0]
				if !c.HasQ || math.Abs(c.Q-tc.wantQ[i]) > 1e-9 {
					t.Errorf("row %d: p %g q %g (has %v), want q %g", i, c.P, c.Q, c.HasQ, tc.wantQ[i])
				}
			}
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, want := range tc.wantText {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if len(tc.factors) > 1 && !strings.Contains(out, fmt.Sprintf("over all %d rows with a p-value", len(tc.factors))) {
				t.Errorf("no note on the family:\n%s", out)
			}
			b.Reset()
			if err := r.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Tables []struct {
					Rows []struct {
						Compared []struct{ P, Q *float64 }
					}
				}
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			for i, row := range doc.Tables[0].Rows {
				if q := row.Compared[0].Q; q == nil || math.Abs(*q-tc.wantQ[i]) > 1e-9 {
					t.Errorf("JSON row %d: q %v, want %g", i, q, tc.wantQ[i])
				}
			}
		})
	}
}

// Rows that print no p-value (too few repeats, no repeats) are not in the
// family and print no q.
func TestQFamilyLeavesOutRowsWithoutP(t *testing.T) {
	l1 := map[string]string{"test": "tcp_rr", "flows": "1"}
	l2 := map[string]string{"test": "tcp_rr", "flows": "2"}
	a := set(run(l1, result.TransPerSec, 100, 101, 99, 100.5, 99.5), run(l2, result.TransPerSec, 100, 101))
	b := set(run(l1, result.TransPerSec, 90, 91, 89, 90.5, 89.5), run(l2, result.TransPerSec, 90, 91))
	r, err := Compare([]Input{{"a.json", a}, {"b.json", b}}, Options{Metrics: []string{result.TransPerSec}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Tests != 1 {
		t.Errorf("family of %d, want 1 (the 2 + 2 row cannot give a verdict)", r.Tests)
	}
	for _, row := range r.Tables[0].Rows {
		c := row.Cells[0]
		if c.TooFew == c.HasQ {
			t.Errorf("%v: too few %v, has q %v", row.Labels, c.TooFew, c.HasQ)
		}
	}
}

// The gate decides on q: a change past the threshold with p ≤ 0.05 but
// q > 0.05 passes; the same change among several others fails.
func TestGateDecidesOnQ(t *testing.T) {
	rules, err := ParseRules([]string{"worse>5%"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		factors []float64
		fail    int
	}{
		{"alone: q = p = 0.008", []float64{0.9}, 1},
		{"one of four: q = 0.032", []float64{0.9, 1, 1, 1}, 1},
		{"one of eight: p = 0.008, q = 0.063", []float64{0.9, 1, 1, 1, 1, 1, 1, 1}, 0},
		{"two of eight worse: q = 0.032", []float64{0.9, 0.8, 1, 1, 1, 1, 1, 1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := family(t, tc.factors...)
			g, err := r.Gate(GateOptions{Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Failures) != tc.fail || g.Family != len(tc.factors) {
				t.Errorf("%d failures in a family of %d, want %d of %d: %+v", len(g.Failures), g.Family, tc.fail, len(tc.factors), g.Failures)
			}
			for _, f := range g.Failures {
				if !f.HasQ || f.Q > 0.05 || !strings.Contains(f.Why, "q=") {
					t.Errorf("failure %+v: want its q (≤ 0.05) in why", f)
				}
			}
			var b bytes.Buffer
			if err := r.WriteGateText(&b); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("q ≤ 0.05 over %d row", len(tc.factors)); !strings.Contains(b.String(), want) {
				t.Errorf("gate text lacks %q:\n%s", want, b.String())
			}
		})
	}
}
