package main

import (
	"errors"
	"math"
	"sort"
)

// Spread is min/median/max of a set of values.
type Spread struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

var errNoValues = errors.New("no values")

// spread returns min/median/max of vs (the median of an even count is the
// mean of the two middle values). NaN and ±Inf are rejected.
func spread(vs []float64) (Spread, error) {
	if len(vs) == 0 {
		return Spread{}, errNoValues
	}
	s := append([]float64(nil), vs...)
	for _, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Spread{}, errors.New("NaN or Inf among values")
		}
	}
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{N: n, Min: s[0], Median: med, Max: s[n-1]}, nil
}

// ratios returns a[i]/b[i] for the rounds in which both sides succeeded.
func ratios(a, b []*float64) []float64 {
	var out []float64
	for i := range a {
		if i < len(b) && a[i] != nil && b[i] != nil && *b[i] > 0 {
			out = append(out, *a[i] / *b[i])
		}
	}
	return out
}
