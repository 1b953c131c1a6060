package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// The U distribution: sums to 1, symmetric, and matches the published
// critical values of the two-sided test at 0.05 (the largest c with
// P(U <= c) <= 0.025).
func TestUDistribution(t *testing.T) {
	for _, tc := range []struct{ n, m, crit int }{
		{5, 5, 2}, {6, 6, 5}, {8, 8, 13}, {10, 10, 23}, {5, 10, 8}, {4, 4, 0},
	} {
		p := uDistribution(tc.n, tc.m)
		sum := 0.0
		for u := range p {
			sum += p[u]
			if math.Abs(p[u]-p[len(p)-1-u]) > 1e-12 {
				t.Errorf("n=%d m=%d: P(U=%d)=%g differs from its mirror %g", tc.n, tc.m, u, p[u], p[len(p)-1-u])
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("n=%d m=%d: probabilities sum to %g", tc.n, tc.m, sum)
		}
		k, cov, err := mannWhitneyK(tc.n, tc.m, 0.95)
		if err != nil {
			t.Errorf("n=%d m=%d: %v", tc.n, tc.m, err)
			continue
		}
		if k-1 != tc.crit {
			t.Errorf("n=%d m=%d: critical value %d, want %d", tc.n, tc.m, k-1, tc.crit)
		}
		if cov < 0.95 || cov > 0.99 {
			t.Errorf("n=%d m=%d: coverage %g", tc.n, tc.m, cov)
		}
	}
	if _, _, err := mannWhitneyK(3, 3, 0.95); !errors.Is(err, ErrNoInterval) {
		t.Errorf("3 against 3: err %v, want ErrNoInterval (the smallest p is 0.1)", err)
	}
}

// The normal approximation agrees with the exact count near the limit.
func TestMannWhitneyKNormal(t *testing.T) {
	kExact, _, _ := mannWhitneyK(50, 50, 0.95)
	kNormal, _, _ := mannWhitneyK(51, 51, 0.95)
	// 51·51 > exactLimit uses the approximation; its k grows by about
	// the change of mu - 1.96·sigma between the two sizes.
	if kNormal < kExact || kNormal > kExact+60 {
		t.Errorf("k(51,51) normal = %d, k(50,50) exact = %d", kNormal, kExact)
	}
}

func TestChangeInterval(t *testing.T) {
	old := []float64{100, 101, 99, 100.5, 99.5}
	for _, tc := range []struct {
		name   string
		new    []float64
		ratio  float64
		lo, hi float64 // the interval must contain [lo, hi]... and be inside bounds below
		err    bool
	}{
		{name: "ten percent slower", new: []float64{90, 90.9, 89.1, 90.45, 89.55}, ratio: 0.9},
		{name: "same", new: []float64{100, 101, 99, 100.5, 99.5}, ratio: 1},
		{name: "zero value", new: []float64{0, 1, 2, 3, 4}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ChangeInterval(old, tc.new, 0.95)
			if tc.err {
				if !errors.Is(err, ErrNoInterval) {
					t.Fatalf("err %v, want ErrNoInterval", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(c.Ratio-tc.ratio) > 1e-9 {
				t.Errorf("ratio %g, want %g", c.Ratio, tc.ratio)
			}
			if !(c.Lo <= c.Ratio && c.Ratio <= c.Hi) {
				t.Errorf("interval [%g, %g] does not contain the estimate %g", c.Lo, c.Hi, c.Ratio)
			}
			if c.Hi/c.Lo > 1.05 {
				t.Errorf("interval [%g, %g] too wide for samples this tight", c.Lo, c.Hi)
			}
		})
	}
}

// Coverage: over many seeded draws of two log-normal samples with a known
// ratio, the 95 % interval contains it at least 95 % of the time (less
// a Monte Carlo margin), and misses on both sides.
func TestChangeIntervalCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const trials, truth = 2000, 0.93
	hit := 0
	for range trials {
		a, b := make([]float64, 5), make([]float64, 7)
		for i := range a {
			a[i] = 100 * math.Exp(0.05*r.NormFloat64())
		}
		for i := range b {
			b[i] = truth * 100 * math.Exp(0.05*r.NormFloat64())
		}
		c, err := ChangeInterval(a, b, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if c.Lo <= truth && truth <= c.Hi {
			hit++
		}
	}
	if got := float64(hit) / trials; got < 0.94 {
		t.Errorf("coverage %.3f, want >= 0.95 (less Monte Carlo error)", got)
	}
}

func TestShiftInterval(t *testing.T) {
	est, lo, hi, cov, err := ShiftInterval([]float64{10, 11, 12, 10.5, 11.5}, []float64{13, 14, 15, 13.5, 14.5}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if est != 3 || !(lo <= 3 && 3 <= hi) || lo <= 0 || cov < 0.95 {
		t.Errorf("shift %g [%g, %g] at %g, want 3 inside a positive interval at >= 0.95", est, lo, hi, cov)
	}
}
