package main

import (
	"math"
	"testing"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Spread
	}{
		{[]float64{3}, Spread{1, 3, 3, 3}},
		{[]float64{5, 1, 3}, Spread{3, 1, 3, 5}},
		{[]float64{4, 1, 3, 2}, Spread{4, 1, 2.5, 4}},
		{[]float64{1.1, 0.9, 1.0, 0.95, 1.2, 0.8}, Spread{6, 0.8, 0.975, 1.2}},
	} {
		in := append([]float64(nil), tc.in...)
		got, err := spread(tc.in)
		if err != nil || math.Abs(got.Median-tc.want.Median) > 1e-12 || got.Min != tc.want.Min || got.Max != tc.want.Max || got.N != tc.want.N {
			t.Errorf("spread(%v) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("spread modified its input: %v", tc.in)
			}
		}
	}
	if _, err := spread(nil); err == nil {
		t.Error("spread(nil): no error")
	}
	if _, err := spread([]float64{1, math.NaN()}); err == nil {
		t.Error("spread(NaN): no error")
	}
}

func TestRatios(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	a := []*float64{f(10), nil, f(9), f(8), f(4)}
	b := []*float64{f(5), f(1), nil, f(8), f(0)}
	got := ratios(a, b)
	want := []float64{2, 1}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ratios = %v, want %v (failed rounds and zero denominators skipped)", got, want)
	}
}
