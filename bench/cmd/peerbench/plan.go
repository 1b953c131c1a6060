package main

import (
	"fmt"
	"strings"
	"time"
)

// The plan of `make bench`, fixed before any measurement (docs/benchmarks.md
// says the same, and every report prints it in its header): the number of
// rounds, the trial length, the confidence level, the interval method, the
// targets and the verdict rule. A run whose settings differ from the plan
// still reports intervals, but its verdicts are labelled exploratory. There
// is no re-run loop: one run, one verdict per comparison.
const (
	// planRounds: 12 paired rounds (each order 6 times). The earlier
	// 6-round runs had a standard deviation of the per-round log-ratio of
	// 0.05–0.14, so 12 rounds give a 95 % interval of about ±3–8 %; the
	// interval narrows only as √n, and 12 rounds keep the default run
	// near 21 minutes.
	planRounds     = 12
	planDuration   = 5 * time.Second
	planWarmup     = time.Second
	planConfidence = 0.95
	// minRounds is the fewest rounds with any 95 % signed-rank interval
	// (with 6 it is the range of the log-ratios, 96.9 % coverage).
	minRounds = 6
)

// intervalMethod names the interval in reports.
const intervalMethod = "Hodges–Lehmann estimate with the exact Wilcoxon signed-rank interval of the per-round log-ratios ln(cnibench/peer), mapped back with exp"

// Kinds of comparison row.
const (
	KindGoal        = "goal"        // unpinned, the target as stated
	KindStretch     = "stretch"     // pinned to one CPU: the engine's own cost shows
	KindExploratory = "exploratory" // not part of the plan: no verdict counts
)

// rowKind says whether a comparison of test under CPU placement pin is a
// goal, a stretch goal or outside the plan. The stretch goals are tcp_rr
// and tcp_crr with everything on one CPU (-pin same), where the rate is
// set by the CPU cost of a transaction, not by cross-CPU wake-ups.
func rowKind(test, pin string) string {
	switch {
	case pin == "none":
		return KindGoal
	case pin == "same" && (test == "tcp_rr" || test == "tcp_crr"):
		return KindStretch
	default:
		return KindExploratory
	}
}

// deviations lists how o differs from the plan (empty: the run follows it).
func (o options) deviations() []string {
	var d []string
	if o.rounds != planRounds {
		d = append(d, fmt.Sprintf("-rounds %d (plan: %d)", o.rounds, planRounds))
	}
	if o.duration != planDuration {
		d = append(d, fmt.Sprintf("-duration %v (plan: %v)", o.duration, planDuration))
	}
	if o.warmup != planWarmup {
		d = append(d, fmt.Sprintf("-warmup %v (plan: %v)", o.warmup, planWarmup))
	}
	return d
}

// planHeader is the plan as printed at the top of every report.
func planHeader(o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan (fixed in code and in docs/benchmarks.md before any measurement): %d rounds per comparison, "+
		"%v trials, %v warm-up; %.0f %% interval: %s. "+
		"Verdict: **met** if the interval's lower bound ≥ target, **missed** if its upper bound < target, **inconclusive** otherwise. ",
		planRounds, planDuration, planWarmup, 100*planConfidence, intervalMethod)
	if o.tests == overheadTest {
		b.WriteString(overheadPlanText())
	} else {
		var ts []string
		for _, c := range comparisons {
			ts = append(ts, fmt.Sprintf("%s ≥ %.2f × %s", c.Test, c.Target, c.Peer))
		}
		fmt.Fprintf(&b, "Targets: %s (unpinned: goal); pinned to one CPU (`-pin same`): tcp_rr and tcp_crr ≥ 0.95 × netperf (stretch goal); "+
			"any other placement is exploratory.", strings.Join(ts, ", "))
	}
	if d := o.deviations(); len(d) > 0 {
		fmt.Fprintf(&b, "  \n**This run does not follow the plan** (%s): its verdicts are exploratory.", strings.Join(d, ", "))
	}
	return b.String()
}

// estimatedRunTime is a rough duration of a run, for the log: a round is
// two trials, the cnibench warm-up, two pauses and ~1.4 s of process start
// and server checks (measured: 13.4 s per round with 5 s trials).
func estimatedRunTime(o options, comparisons int) time.Duration {
	perRound := 2*o.duration + o.warmup + 2*o.pause + 1400*time.Millisecond
	return time.Duration(o.rounds*comparisons) * perRound
}
