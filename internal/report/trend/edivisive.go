package trend

import (
	"math"
	"math/rand/v2"
	"slices"
)

// E-divisive means (Matteson & James, "A Nonparametric Approach for
// Multiple Change Point Analysis of Multivariate Data", JASA 2014), as
// MongoDB's signal-processing-algorithms and Datastax's Hunter use it on
// performance histories: the divergence of a split τ of a segment Z into
// X = Z[:τ] (m values) and Y = Z[τ:κ] (k values, the best κ) is the
// energy statistic (exponent 1)
//
//	Q(τ) = m·k/(m+k) · ( 2/(m·k)·Σ|x−y| − 1/C(m,2)·Σ|x−x'| − 1/C(k,2)·Σ|y−y'| )
//
// (a within-term with fewer than two values is 0). Binary segmentation:
// the best split of every current segment is a candidate; the largest is
// tested by permutation (the values are shuffled within every segment and
// the largest best split recomputed; p = (1 + #{Q_perm ≥ Q})/(1 + R)) and
// kept when p ≤ alpha, then the search repeats on the new segments.
//
// It is implemented here rather than taken from a library: no Go module
// this project can use offers it with a significance test per change
// (docs/trends.md, "Why it is implemented here", lists those looked at).

// split is a change point found by eDivisive: At is the index of the
// first value after the change, Q its divergence, P its permutation p-value.
type split struct {
	At int
	Q  float64
	P  float64
}

// bestSplit returns the split τ (1 ≤ τ < len(z)) maximising Q over the
// windows Z[:κ] (τ < κ ≤ len(z)), as Matteson & James do: the right side
// ends where it diverges most from the left, so a change that is undone
// later (a dip) is found as well as a step. τ is 0 when z has fewer than
// two values or no split has Q > 0. O(n²) time and memory.
func bestSplit(z []float64) (int, float64) {
	n := len(z)
	if n < 2 {
		return 0, 0
	}
	// col[c][r] = Σ_{i<r} |z_i − z_c| for r ≤ c.
	col := make([][]float64, n)
	for c := range col {
		col[c] = make([]float64, c+1)
		for r := 1; r <= c; r++ {
			col[c][r] = col[c][r-1] + math.Abs(z[r-1]-z[c])
		}
	}
	best, bestQ := 0, 0.0
	withinX := 0.0 // Σ_{i<j<τ} |z_i − z_j|
	for t := 1; t < n; t++ {
		withinX += col[t-1][t-1]
		m := float64(t)
		cross, withinY := 0.0, 0.0
		for kappa := t + 1; kappa <= n; kappa++ {
			c := kappa - 1
			cross += col[c][t]
			withinY += col[c][c] - col[c][t]
			k := float64(kappa - t)
			e := 2 * cross / (m * k)
			if t > 1 {
				e -= withinX / (m * (m - 1) / 2)
			}
			if kappa-t > 1 {
				e -= withinY / (k * (k - 1) / 2)
			}
			if q := m * k / (m + k) * e; q > bestQ*(1+1e-12) {
				best, bestQ = t, q
			}
		}
	}
	return best, bestQ
}

// eDivisive finds the change points of z at significance alpha with perms
// permutations per test, seeded (deterministic). The result is sorted by At.
func eDivisive(z []float64, alpha float64, perms int, seed uint64) []split {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	bounds := []int{0, len(z)} // segment boundaries, sorted
	var out []split
	buf := make([]float64, len(z))
	for {
		at, q := 0, 0.0
		for i := 0; i+1 < len(bounds); i++ {
			a, b := bounds[i], bounds[i+1]
			if t, tq := bestSplit(z[a:b]); t > 0 && tq > q {
				at, q = a+t, tq
			}
		}
		if at == 0 || q <= 0 {
			break
		}
		// Permutation test: how often does shuffling within the segments
		// give as large a best split?
		limit := alpha * float64(perms+1) // more hits than this: not significant
		hits := 0
		for r := 0; r < perms && float64(hits+1) <= limit; r++ {
			copy(buf, z)
			maxQ := 0.0
			for i := 0; i+1 < len(bounds); i++ {
				seg := buf[bounds[i]:bounds[i+1]]
				rng.Shuffle(len(seg), func(x, y int) { seg[x], seg[y] = seg[y], seg[x] })
				if _, pq := bestSplit(seg); pq > maxQ {
					maxQ = pq
				}
			}
			if maxQ >= q*(1-1e-9) {
				hits++
			}
		}
		p := float64(hits+1) / float64(perms+1)
		if p > alpha {
			break
		}
		out = append(out, split{At: at, Q: q, P: p})
		bounds = append(bounds, at)
		slices.Sort(bounds)
	}
	slices.SortFunc(out, func(a, b split) int { return a.At - b.At })
	return out
}

// median of xs (not modified); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// relShift is |after/before − 1|; +Inf when before is 0 and after is not.
func relShift(before, after float64) float64 {
	if before == 0 {
		if after == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(after/before - 1)
}

// pruneSmall drops the splits whose segments' medians differ by less than
// minShift (relative), the smallest first, recomputing the neighbouring
// segments after every drop, so that every split left moves the median of
// the values between its neighbours by at least minShift.
func pruneSmall(z []float64, splits []split, minShift float64) []split {
	splits = slices.Clone(splits)
	for {
		worst, worstShift := -1, math.Inf(1)
		for i, s := range splits {
			from, to := 0, len(z)
			if i > 0 {
				from = splits[i-1].At
			}
			if i+1 < len(splits) {
				to = splits[i+1].At
			}
			sh := relShift(median(z[from:s.At]), median(z[s.At:to]))
			if sh < minShift && sh < worstShift {
				worst, worstShift = i, sh
			}
		}
		if worst < 0 {
			return splits
		}
		splits = slices.Delete(splits, worst, worst+1)
	}
}
