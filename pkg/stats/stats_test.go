package stats

import (
	"math"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name             string
		in               []float64
		n                int
		median, min, max float64
		lo, hi           float64 // expected CI bounds (checked when lo <= hi)
		confidence       float64 // checked when > 0
		warn             []string
		noWarn           []string
	}{
		{
			name: "empty", in: nil,
			warn: []string{"no measurements"},
		},
		{
			name: "only NaN and Inf", in: []float64{nan, inf, -inf},
			warn: []string{"no measurements"},
		},
		{
			name: "single", in: []float64{42},
			n: 1, median: 42, min: 42, max: 42, lo: 42, hi: 42,
			warn: []string{"only 1 repeat(s)"},
		},
		{
			name: "three repeats: range with 75% confidence", in: []float64{10, 11, 12},
			n: 3, median: 11, min: 10, max: 12, lo: 10, hi: 12, confidence: 0.75,
			warn: []string{"only 3 repeat(s)", "too few for a 95% interval", "(75.0% confidence)"},
		},
		{
			name: "five quiet repeats", in: []float64{100, 101, 99, 100.5, 99.5},
			n: 5, median: 100, min: 99, max: 101, lo: 99, hi: 101, confidence: 0.9375,
			warn:   []string{"too few for a 95% interval"},
			noWarn: []string{"only", "noisy", "far outside"},
		},
		{
			name: "ten quiet repeats: a real 95% interval", in: []float64{100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100},
			n: 10, median: 100, min: 99, max: 101, lo: 99.5, hi: 100.5,
			noWarn: []string{"only", "noisy", "far outside", "too few"},
		},
		{
			name: "NaN ignored", in: []float64{100, nan, 101, 99, 100.5, 99.5},
			n: 5, median: 100, min: 99, max: 101, lo: 99, hi: 101,
		},
		{
			name: "noisy", in: []float64{50, 100, 150, 80, 120},
			n: 5, median: 100, min: 50, max: 150, lo: 50, hi: 150,
			warn: []string{"noisy: coefficient of variation 38.1% is above 10%"},
		},
		{
			name: "outlier", in: []float64{100, 101, 99, 100, 100.5, 99.5, 300},
			n: 7, median: 100, min: 99, max: 300,
			warn: []string{"1 repeat(s) far outside the rest", "off the median by +200.0%"},
		},
		{
			name: "all equal", in: []float64{7, 7, 7, 7, 7},
			n: 5, median: 7, min: 7, max: 7, lo: 7, hi: 7,
			noWarn: []string{"noisy", "far outside"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.in)
			if s.N != tt.n {
				t.Fatalf("N = %d, want %d", s.N, tt.n)
			}
			if s.N > 0 {
				if s.Median != tt.median || s.Min != tt.min || s.Max != tt.max {
					t.Errorf("median/min/max = %v/%v/%v, want %v/%v/%v", s.Median, s.Min, s.Max, tt.median, tt.min, tt.max)
				}
				if tt.lo <= tt.hi && (tt.lo != 0 || tt.hi != 0) && (s.CI95Low != tt.lo || s.CI95High != tt.hi) {
					t.Errorf("CI = [%v, %v], want [%v, %v]", s.CI95Low, s.CI95High, tt.lo, tt.hi)
				}
				if s.CI95Low > s.Median || s.CI95High < s.Median {
					t.Errorf("CI [%v, %v] does not contain the median %v", s.CI95Low, s.CI95High, s.Median)
				}
			}
			if tt.confidence > 0 && math.Abs(s.Confidence-tt.confidence) > 1e-9 {
				t.Errorf("Confidence = %v, want %v", s.Confidence, tt.confidence)
			}
			for _, f := range []float64{s.Median, s.Min, s.Max, s.Mean, s.CI95Low, s.CI95High, s.Confidence, s.CoV} {
				if math.IsNaN(f) || math.IsInf(f, 0) {
					t.Errorf("summary has a non-finite field: %+v", s)
				}
			}
			all := strings.Join(s.Warnings, "\n")
			for _, w := range tt.warn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", s.Warnings, w)
				}
			}
			for _, w := range tt.noWarn {
				if strings.Contains(all, w) {
					t.Errorf("warnings %q contain %q", s.Warnings, w)
				}
			}
		})
	}
}

func TestOutliers(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want []float64
	}{
		{"too few", []float64{1, 2, 100}, nil},
		{"none", []float64{10, 11, 12, 13, 14}, nil},
		{"high", []float64{10, 11, 12, 13, 14, 100}, []float64{100}},
		{"low and high", []float64{-100, 10, 10.5, 11, 11.5, 12, 100}, []float64{-100, 100}},
		{"zero MAD", []float64{5, 5, 5, 5, 9}, []float64{9}},
		{"quiet sample, small deviation", []float64{100, 100.1, 99.9, 100.05, 102}, nil},
		{"all zero", []float64{0, 0, 0, 0, 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Outliers(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("Outliers = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("Outliers = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestCompare(t *testing.T) {
	base := []float64{100, 101, 99, 100.5, 99.5}
	tests := []struct {
		name        string
		old, new    []float64
		significant bool
		delta       float64 // checked when !NaN
		maxP, minP  float64
		warn        string
	}{
		{
			name: "clear improvement", old: base, new: []float64{110, 111, 109, 110.5, 109.5},
			significant: true, delta: 10, maxP: 0.05,
		},
		{
			name: "clear regression", old: base, new: []float64{90, 91, 89, 90.5, 89.5},
			significant: true, delta: -10, maxP: 0.05,
		},
		{
			name: "overlap: not significant", old: base, new: []float64{100.2, 100.8, 99.2, 100.4, 99.6}, delta: 0.2,
			significant: false, minP: 0.05,
		},
		{
			name: "too few to tell", old: []float64{1, 2}, new: []float64{3, 4},
			significant: false, delta: 133.33333333333334, minP: 0.05, warn: "need >= 4 each",
		},
		{
			name: "empty side", old: base, new: nil,
			significant: false, minP: 1, delta: math.NaN(), warn: "one side has no measurements",
		},
		{
			name: "old median zero: no delta", old: []float64{0, 0, 0, 0, 0}, new: []float64{1, 1, 1, 1, 1},
			significant: true, delta: math.NaN(), maxP: 0.05,
		},
		{
			name: "NaN in the input is ignored", old: append([]float64{math.NaN()}, base...), new: []float64{110, 111, 109, 110.5, 109.5, math.Inf(1)},
			significant: true, delta: 10, maxP: 0.05,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.old, tt.new)
			if c.Significant != tt.significant {
				t.Errorf("Significant = %v (p=%v), want %v", c.Significant, c.P, tt.significant)
			}
			if math.IsNaN(tt.delta) != math.IsNaN(c.DeltaPct) || (!math.IsNaN(tt.delta) && math.Abs(c.DeltaPct-tt.delta) > 1e-9) {
				t.Errorf("DeltaPct = %v, want %v", c.DeltaPct, tt.delta)
			}
			if tt.maxP > 0 && c.P > tt.maxP {
				t.Errorf("P = %v, want <= %v", c.P, tt.maxP)
			}
			if c.P < tt.minP {
				t.Errorf("P = %v, want >= %v", c.P, tt.minP)
			}
			if c.Alpha != 0.05 {
				t.Errorf("Alpha = %v, want 0.05", c.Alpha)
			}
			if tt.warn != "" && !strings.Contains(strings.Join(c.Warnings, "\n"), tt.warn) {
				t.Errorf("warnings %q lack %q", c.Warnings, tt.warn)
			}
		})
	}
}

func TestCIHalfPct(t *testing.T) {
	tests := []struct {
		s    Summary
		want float64
	}{
		{Summary{}, 0},
		{Summary{N: 5, Median: 100, CI95Low: 98, CI95High: 101}, 2},
		{Summary{N: 5, Median: 100, CI95Low: 99, CI95High: 105}, 5},
		{Summary{N: 5, Median: -100, CI95Low: -105, CI95High: -99}, 5},
		{Summary{N: 5, Median: 0, CI95Low: -1, CI95High: 1}, 0},
	}
	for _, tt := range tests {
		if got := tt.s.CIHalfPct(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%+v.CIHalfPct() = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	got := Clean([]float64{1, math.NaN(), 2, math.Inf(-1), 3})
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("Clean = %v", got)
	}
}

func TestNotable(t *testing.T) {
	tests := []struct {
		in   []float64
		want bool
	}{
		{[]float64{100, 101, 99, 100.5, 99.5}, false},
		{[]float64{100, 101, 99}, true},
		{[]float64{50, 100, 150, 80, 120}, true},
		{nil, true},
	}
	for _, tt := range tests {
		s := Summarize(tt.in)
		if got := Notable(s); got != tt.want {
			t.Errorf("Notable(%v) = %v, want %v (warnings %q)", tt.in, got, tt.want, s.Warnings)
		}
	}
	if !IsRangeNote(Summarize([]float64{1, 2, 3, 4, 5}).Warnings[0]) {
		t.Error("IsRangeNote does not recognise the range note")
	}
}

func TestTooFewForAVerdict(t *testing.T) {
	tests := []struct {
		old, new []float64
		tooFew   bool
	}{
		{[]float64{1, 2, 3}, []float64{10, 11, 12}, true}, // 3 vs 3: p ≥ 0.1 whatever the data
		{[]float64{1, 2, 3, 4}, []float64{10, 11, 12, 13}, false},
		{[]float64{1, 2, 3, 4, 5}, []float64{10, 11, 12, 13, 14}, false},
		{[]float64{1, 2}, []float64{10, 11, 12, 13, 14, 15}, true}, // 2/C(8,2) = 0.071 > 0.05
	}
	for _, tt := range tests {
		c := Compare(tt.old, tt.new)
		want := MinP(len(tt.old), len(tt.new)) > c.Alpha
		if c.TooFew != want {
			t.Errorf("%d vs %d: TooFew %v, want %v (min p %.3f)", len(tt.old), len(tt.new), c.TooFew, want, MinP(len(tt.old), len(tt.new)))
		}
		if len(tt.old) == 3 && len(tt.new) == 3 {
			if !c.TooFew || len(c.Warnings) == 0 || !strings.Contains(c.Warnings[0], "n=3 vs 3: too few repeats for a significance test at alpha=0.05") || !strings.Contains(c.Warnings[0], "need >= 4 each") {
				t.Errorf("3 vs 3 warnings: %q", c.Warnings)
			}
		}
	}
	if got := MinP(3, 3); math.Abs(got-0.1) > 1e-12 {
		t.Errorf("MinP(3,3) = %v, want 0.1", got)
	}
	if got := NeededEach(0.05); got != 4 {
		t.Errorf("NeededEach(0.05) = %d, want 4", got)
	}
}
