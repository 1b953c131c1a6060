package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Change is the estimated change from an old sample to a new one, as a
// ratio new/old, with its distribution-free confidence interval: the
// two-sample Hodges–Lehmann estimator on the logarithms of the values and
// the interval that inverts the Mann–Whitney U test (Hollander & Wolfe,
// Nonparametric Statistical Methods, ch. 4.3). It assumes only that the
// two samples differ by a factor (a shift of the logarithms) and are
// independent; the interval is exact (from the U distribution) up to
// 2500 pairs of values, a normal approximation above.
type Change struct {
	// Ratio is exp(the median of all log(new_j) - log(old_i)).
	Ratio float64
	// Lo and Hi bound the ratio at Confidence (its exact coverage, at
	// least the level asked for: the U distribution is discrete).
	Lo, Hi     float64
	Confidence float64
}

// ErrNoInterval: the samples are too small for an interval at the asked
// confidence, or hold values a ratio cannot use (zero or negative).
var ErrNoInterval = errors.New("no confidence interval of the change")

// ChangeInterval estimates the change from old to new (NaN and ±Inf
// dropped) with its conf interval. Every value must be positive.
func ChangeInterval(old, new []float64, conf float64) (Change, error) {
	for _, xs := range [][]float64{old, new} {
		for _, v := range Clean(xs) {
			if v <= 0 {
				return Change{}, fmt.Errorf("%w: the ratio needs positive values, got %g", ErrNoInterval, v)
			}
		}
	}
	est, lo, hi, cov, err := shiftInterval(old, new, conf, math.Log)
	return Change{Ratio: math.Exp(est), Lo: math.Exp(lo), Hi: math.Exp(hi), Confidence: cov}, err
}

// ShiftInterval estimates the difference new - old (NaN and ±Inf
// dropped): the two-sample Hodges–Lehmann estimate and the conf interval
// that inverts the Mann–Whitney U test, for metrics compared by their
// difference (CPU shares in percentage points).
func ShiftInterval(old, new []float64, conf float64) (est, lo, hi, coverage float64, err error) {
	return shiftInterval(old, new, conf, func(v float64) float64 { return v })
}

func shiftInterval(old, new []float64, conf float64, f func(float64) float64) (est, lo, hi, coverage float64, err error) {
	a, b := Clean(old), Clean(new)
	nan := math.NaN()
	if !(conf > 0 && conf < 1) {
		return nan, nan, nan, 0, fmt.Errorf("confidence %v: must be in (0, 1)", conf)
	}
	if len(a) == 0 || len(b) == 0 {
		return nan, nan, nan, 0, fmt.Errorf("%w: a side has no values", ErrNoInterval)
	}
	d := make([]float64, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			d = append(d, f(y)-f(x))
		}
	}
	sort.Float64s(d)
	est = quantileSorted(d)
	k, cov, err := mannWhitneyK(len(a), len(b), conf)
	if err != nil {
		return est, nan, nan, 0, err
	}
	return est, d[k-1], d[len(d)-k], cov, nil
}

// quantileSorted is the median of sorted xs.
func quantileSorted(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// exactLimit is the largest n·m for which the U distribution is counted.
const exactLimit = 2500

// mannWhitneyK returns the 1-based rank k such that, of the n·m sorted
// pairwise differences, [D(k), D(nm+1-k)] is the two-sided conf interval of
// the shift: k-1 is the largest c with P(U <= c) <= (1-conf)/2 under the
// null. It also returns the interval's coverage, 1 - 2·P(U <= k-1).
func mannWhitneyK(n, m int, conf float64) (int, float64, error) {
	alpha2 := (1 - conf) / 2
	nm := n * m
	if nm > exactLimit {
		// Normal approximation of U (no ties: the values are continuous).
		mu := float64(nm) / 2
		sigma := math.Sqrt(float64(nm) * float64(n+m+1) / 12)
		z := distuv.UnitNormal.Quantile(alpha2)
		c := int(math.Floor(mu + z*sigma - 0.5))
		if c < 0 {
			return 0, 0, fmt.Errorf("%w: %d against %d values", ErrNoInterval, n, m)
		}
		p := distuv.UnitNormal.CDF((float64(c) + 0.5 - mu) / sigma)
		return c + 1, 1 - 2*p, nil
	}
	pdf := uDistribution(n, m)
	cdf, c := 0.0, -1
	for u := 0; u <= nm; u++ {
		// A tiny tolerance so that exact ties with alpha/2 count.
		if cdf+pdf[u] > alpha2*(1+1e-12) {
			break
		}
		cdf += pdf[u]
		c = u
	}
	if c < 0 {
		return 0, 0, fmt.Errorf("%w at %.0f%%: %d against %d repeats reach at most %.1f%% (need more repeats)",
			ErrNoInterval, 100*conf, n, m, 100*(1-2*pdf[0]))
	}
	return c + 1, 1 - 2*cdf, nil
}

// uDistribution returns P(U = u), u = 0..n·m, for the Mann–Whitney U
// statistic of samples of sizes n and m under the null (no ties): the
// number of ways N(n, m, u) = N(n-1, m, u-m) + N(n, m-1, u), divided by
// C(n+m, n), computed in probabilities to stay finite.
func uDistribution(n, m int) []float64 {
	// f[i][j] is the distribution for sizes i and j, built row by row.
	prev := make([][]float64, m+1) // prev[j]: sizes (i-1, j)
	for j := 0; j <= m; j++ {
		prev[j] = []float64{1} // i = 0: U = 0 surely
	}
	for i := 1; i <= n; i++ {
		cur := make([][]float64, m+1)
		cur[0] = []float64{1} // j = 0
		for j := 1; j <= m; j++ {
			// P_{i,j}(u) = i/(i+j) P_{i-1,j}(u-j) + j/(i+j) P_{i,j-1}(u):
			// the largest of the i+j values is from the first sample with
			// probability i/(i+j) and then exceeds all j of the second.
			p := make([]float64, i*j+1)
			wa, wb := float64(i)/float64(i+j), float64(j)/float64(i+j)
			for u, v := range prev[j] {
				p[u+j] += wa * v
			}
			for u, v := range cur[j-1] {
				p[u] += wb * v
			}
			cur[j] = p
		}
		prev = cur
	}
	return prev[m]
}
