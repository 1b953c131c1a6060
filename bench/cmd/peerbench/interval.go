package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// RatioCI is the estimate of the ratio cnibench/peer over paired rounds,
// with its confidence interval (see ratioInterval).
type RatioCI struct {
	N int `json:"n"`
	// Estimate is exp(Hodges–Lehmann estimate of the log-ratios): the
	// pseudo-median of the per-round ratios.
	Estimate float64 `json:"estimate"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	// Confidence is the interval's exact coverage (at least the level
	// asked for; the signed-rank distribution is discrete).
	Confidence float64 `json:"confidence"`
}

// errTooFewRounds: no interval at the asked confidence exists for n rounds.
var errTooFewRounds = errors.New("too few rounds for a confidence interval")

// signedRankK returns the 1-based rank k such that, among the n(n+1)/2
// sorted Walsh averages of n values, [W(k), W(M+1-k)] is the two-sided
// confidence interval of the centre of a symmetric distribution
// (Hodges–Lehmann / Wilcoxon signed-rank, exact): k-1 is the largest c
// with P(T <= c) <= (1-conf)/2, T the signed-rank statistic under the null.
// It also returns the interval's exact coverage, 1 - 2·P(T <= k-1).
func signedRankK(n int, conf float64) (k int, coverage float64, err error) {
	if n < 1 {
		return 0, 0, errTooFewRounds
	}
	if !(conf > 0 && conf < 1) {
		return 0, 0, fmt.Errorf("confidence %v: must be in (0, 1)", conf)
	}
	// p[t] = P(T = t): T is the sum of a random subset of {1..n}, each
	// rank in the subset with probability 1/2.
	maxT := n * (n + 1) / 2
	p := make([]float64, maxT+1)
	p[0] = 1
	for i := 1; i <= n; i++ {
		for t := i * (i + 1) / 2; t >= 0; t-- {
			q := p[t]
			if t >= i {
				q += p[t-i]
			}
			p[t] = q / 2
		}
	}
	alpha2 := (1 - conf) / 2
	cdf := 0.0
	c := -1
	for t := 0; t <= maxT; t++ {
		// A tiny tolerance so that exact ties (e.g. 1/40 = 0.025) count.
		if cdf+p[t] > alpha2*(1+1e-12) {
			break
		}
		cdf += p[t]
		c = t
	}
	if c < 0 {
		return 0, 0, fmt.Errorf("%w: %d rounds give at most %.1f%% confidence, %.0f%% asked",
			errTooFewRounds, n, 100*(1-2*p[0]), 100*conf)
	}
	return c + 1, 1 - 2*cdf, nil
}

// hodgesLehmann returns the Hodges–Lehmann estimate of the centre of xs
// (the median of the Walsh averages (x_i+x_j)/2, i <= j) and its exact
// distribution-free confidence interval, which assumes only independent
// values symmetric about the centre.
func hodgesLehmann(xs []float64, conf float64) (est, lo, hi, coverage float64, err error) {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, 0, 0, 0, errors.New("NaN or Inf among values")
		}
	}
	n := len(xs)
	if n == 0 {
		return 0, 0, 0, 0, errNoValues
	}
	w := make([]float64, 0, n*(n+1)/2)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			w = append(w, (xs[i]+xs[j])/2)
		}
	}
	sort.Float64s(w)
	m := len(w)
	est = w[m/2]
	if m%2 == 0 {
		est = (w[m/2-1] + w[m/2]) / 2
	}
	k, coverage, err := signedRankK(n, conf)
	if err != nil {
		return est, 0, 0, 0, err
	}
	return est, w[k-1], w[m-k], coverage, nil
}

// ratioInterval is the interval of the ratio cnibench/peer from per-round
// paired ratios: Hodges–Lehmann with the exact Wilcoxon signed-rank
// interval on the log-ratios, mapped back with exp. Log-ratios make the
// test symmetric in the two sides (a ratio of 2 and of 1/2 are equally far
// from parity). Every ratio must be > 0.
func ratioInterval(ratios []float64, conf float64) (RatioCI, error) {
	logs := make([]float64, len(ratios))
	for i, r := range ratios {
		if !(r > 0) || math.IsInf(r, 0) {
			return RatioCI{}, fmt.Errorf("ratio %v of round %d: must be finite and > 0", r, i+1)
		}
		logs[i] = math.Log(r)
	}
	est, lo, hi, cov, err := hodgesLehmann(logs, conf)
	ci := RatioCI{N: len(ratios)}
	if len(ratios) > 0 {
		ci.Estimate = math.Exp(est)
	}
	if err != nil {
		return ci, err
	}
	ci.Lo, ci.Hi, ci.Confidence = math.Exp(lo), math.Exp(hi), cov
	return ci, nil
}

// Verdicts of a comparison against its target, decided by the rule below.
const (
	VerdictMet          = "met"
	VerdictMissed       = "missed"
	VerdictInconclusive = "inconclusive"
)

// judge is the plan applied to per-round ratios: their interval (nil, with
// the reason as a warning, when there is none) and the verdict against
// target.
func judge(ratios []float64, target float64) (ci *RatioCI, verdict, warning string) {
	c, err := ratioInterval(ratios, planConfidence)
	if err != nil {
		return nil, decide(0, 0, target, false), fmt.Sprintf("no interval: %v", err)
	}
	return &c, decide(c.Lo, c.Hi, target, true), ""
}

// decide is the verdict rule fixed before any measurement: met when the
// whole interval is at or above the target (lower bound >= target), missed
// when the whole interval is below it (upper bound < target), inconclusive
// otherwise — including when there is no interval (ok false).
func decide(lo, hi, target float64, ok bool) string {
	switch {
	case !ok:
		return VerdictInconclusive
	case lo >= target:
		return VerdictMet
	case hi < target:
		return VerdictMissed
	default:
		return VerdictInconclusive
	}
}
