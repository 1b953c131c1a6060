package stats

import (
	"math"
	"sort"
)

// BenjaminiHochberg returns the Benjamini–Hochberg q-values (adjusted
// p-values) of ps, in their order: q(i) = min over j with p(j) ≥ p(i) of
// m·p(j)/rank(j), at most 1, m the number of finite p-values. Declaring
// every test with q ≤ α significant keeps the expected share of false
// discoveries among them at most α when the tests are independent or
// positively dependent (Benjamini & Hochberg 1995; Benjamini & Yekutieli
// 2001), as the points of a sweep measured one after another are taken
// to be. NaN and infinite p-values stay NaN and do not count in m.
func BenjaminiHochberg(ps []float64) []float64 {
	q := make([]float64, len(ps))
	var idx []int
	for i, p := range ps {
		q[i] = math.NaN()
		if !math.IsNaN(p) && !math.IsInf(p, 0) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	m := float64(len(idx))
	prev := 1.0
	for k := len(idx) - 1; k >= 0; k-- {
		v := math.Min(prev, ps[idx[k]]*m/float64(k+1))
		q[idx[k]], prev = v, v
	}
	return q
}
