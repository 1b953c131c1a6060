package main

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// Critical values of the Wilcoxon signed-rank statistic, two-sided
// α = 0.05 (the largest c with P(T <= c) <= 0.025), from the standard
// tables: the interval uses the (c+1)-th Walsh average from each end.
func TestSignedRankK(t *testing.T) {
	crit := map[int]int{6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 11: 10, 12: 13, 13: 17, 14: 21, 15: 25,
		16: 29, 17: 34, 18: 40, 19: 46, 20: 52, 25: 89, 30: 137}
	for n, c := range crit {
		k, cov, err := signedRankK(n, 0.95)
		if err != nil || k != c+1 {
			t.Errorf("n=%d: k=%d err=%v, want k=%d", n, k, err, c+1)
		}
		if cov < 0.95 || cov > 0.99 {
			t.Errorf("n=%d: coverage %.4f, want in [0.95, 0.99]", n, cov)
		}
	}
	// n=6: P(T <= 0) = 1/64, so the interval is the full range with
	// coverage 1 - 2/64.
	if _, cov, _ := signedRankK(6, 0.95); math.Abs(cov-(1-2.0/64)) > 1e-12 {
		t.Errorf("n=6 coverage %v, want %v", cov, 1-2.0/64)
	}
	for _, n := range []int{0, 1, 5} {
		if _, _, err := signedRankK(n, 0.95); !errors.Is(err, errTooFewRounds) {
			t.Errorf("n=%d: err=%v, want errTooFewRounds", n, err)
		}
	}
	if _, _, err := signedRankK(10, 1.5); err == nil {
		t.Error("confidence 1.5: no error")
	}
}

func TestHodgesLehmann(t *testing.T) {
	for _, tc := range []struct {
		name           string
		xs             []float64
		est, lo, hi    float64
		wantErr        bool
		wantIntervalOK bool
	}{
		// n=6, k=1: the interval is [min, max]; HL = median of the 21
		// Walsh averages of 1..6 = 3.5.
		{name: "n6", xs: []float64{1, 2, 3, 4, 5, 6}, est: 3.5, lo: 1, hi: 6, wantIntervalOK: true},
		// n=8, k=4: the 4th smallest Walsh average of 1..8 is 2
		// (1, 1.5, 2, 2), the 4th largest is 7.
		{name: "n8", xs: []float64{8, 1, 7, 2, 6, 3, 5, 4}, est: 4.5, lo: 2, hi: 7, wantIntervalOK: true},
		// One outlier leaves HL at 0 (the mean would be 12.5); 28 Walsh
		// averages are 0, 7 are 50 and one is 100: W(4)=0, W(33)=50.
		{name: "outlier", xs: []float64{0, 0, 0, 0, 0, 0, 0, 100}, est: 0, lo: 0, hi: 50, wantIntervalOK: true},
		{name: "too few", xs: []float64{1, 2, 3, 4, 5}, est: 3, wantErr: true},
		{name: "empty", xs: nil, wantErr: true},
		{name: "nan", xs: []float64{1, math.NaN(), 2, 3, 4, 5}, wantErr: true},
	} {
		est, lo, hi, _, err := hodgesLehmann(tc.xs, 0.95)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err=%v, wantErr %v", tc.name, err, tc.wantErr)
			continue
		}
		if tc.name != "empty" && tc.name != "nan" && est != tc.est {
			t.Errorf("%s: estimate %v, want %v", tc.name, est, tc.est)
		}
		if tc.wantIntervalOK && (lo != tc.lo || hi != tc.hi) {
			t.Errorf("%s: interval [%v, %v], want [%v, %v]", tc.name, lo, hi, tc.lo, tc.hi)
		}
	}
}

// The interval covers the true centre about 95 % of the time for
// symmetric noise (seeded, so deterministic).
func TestHodgesLehmannCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const trials = 3000
	for _, n := range []int{6, 10, 16} {
		covered := 0
		_, want, _ := signedRankK(n, 0.95)
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 0.3 + 0.1*r.NormFloat64()
			}
			_, lo, hi, _, err := hodgesLehmann(xs, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if lo <= 0.3 && 0.3 <= hi {
				covered++
			}
		}
		got := float64(covered) / trials
		if math.Abs(got-want) > 0.015 {
			t.Errorf("n=%d: coverage %.3f, want %.3f ± 0.015", n, got, want)
		}
	}
}

func TestRatioInterval(t *testing.T) {
	// Ratios symmetric in log space around 1: estimate 1, interval the
	// range for n=6.
	ci, err := ratioInterval([]float64{0.8, 1.25, 0.9, 1 / 0.9, 1, 1}, 0.95)
	if err != nil || math.Abs(ci.Estimate-1) > 1e-12 || math.Abs(ci.Lo-0.8) > 1e-12 || math.Abs(ci.Hi-1.25) > 1e-12 || ci.N != 6 {
		t.Errorf("ratioInterval = %+v, %v; want estimate 1, [0.8, 1.25]", ci, err)
	}
	// The estimate is kept even when there are too few rounds.
	ci, err = ratioInterval([]float64{1, 1, 1}, 0.95)
	if !errors.Is(err, errTooFewRounds) || ci.Estimate != 1 || ci.N != 3 {
		t.Errorf("3 rounds: %+v, %v; want estimate 1 and errTooFewRounds", ci, err)
	}
	for _, bad := range [][]float64{{1, 0, 1, 1, 1, 1}, {1, -1, 1, 1, 1, 1}, {1, math.Inf(1), 1, 1, 1, 1}, {math.NaN(), 1, 1, 1, 1, 1}} {
		if _, err := ratioInterval(bad, 0.95); err == nil {
			t.Errorf("ratioInterval(%v): no error", bad)
		}
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, target float64
		ok             bool
		want           string
	}{
		{0.96, 1.10, 0.95, true, VerdictMet},
		{0.95, 1.10, 0.95, true, VerdictMet}, // lower bound == target: met
		{0.90, 1.10, 0.95, true, VerdictInconclusive},
		{0.90, 0.95, 0.95, true, VerdictInconclusive}, // upper bound == target: not missed
		{0.80, 0.949, 0.95, true, VerdictMissed},
		{1.31, 1.68, 1.00, true, VerdictMet},
		{0.99, 1.01, 1.00, true, VerdictInconclusive},
		{2, 3, 0.95, false, VerdictInconclusive}, // no interval
	} {
		if got := decide(tc.lo, tc.hi, tc.target, tc.ok); got != tc.want {
			t.Errorf("decide(%v, %v, target %v, ok %v) = %s, want %s", tc.lo, tc.hi, tc.target, tc.ok, got, tc.want)
		}
	}
}
