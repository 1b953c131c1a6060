package result

import (
	"fmt"
	"math"

	"github.com/cnibench/cnibench/pkg/stats"
)

// Interference summarises how busy the host was with other programs
// (docs/interference.md): the idle probe before the run, the threshold a
// repeat was marked busy at, and what that touched.
type Interference struct {
	// ThresholdPct is the rule: a repeat whose window saw other programs
	// (and steal) use more than this share of a core is busy. 0: off.
	ThresholdPct float64 `json:"threshold_pct"`
	// IdleSeconds, IdleForeignPct and IdleStealPct are the probe of the
	// host before the first measurement: other programs' CPU and steal
	// while the run's own processes were idle (percent of one core).
	IdleSeconds    float64 `json:"idle_seconds,omitempty"`
	IdleForeignPct float64 `json:"idle_foreign_pct"`
	IdleStealPct   float64 `json:"idle_steal_pct"`
	IdleError      string  `json:"idle_error,omitempty"`
	// MedianPct is the median interference over every measured repeat
	// (InterferencePct), MaxPct the largest.
	MedianPct float64 `json:"median_pct"`
	MaxPct    float64 `json:"max_pct"`
	// Repeats counts the measured repeats with an interference figure,
	// Busy those marked, Reruns the repeats measured again for them.
	Repeats int `json:"repeats"`
	Busy    int `json:"busy"`
	Reruns  int `json:"reruns"`
	// Cells counts the cells measured, Touched those with a busy repeat,
	// NotTrusted those left without enough clean ones.
	Cells      int `json:"cells"`
	Touched    int `json:"touched"`
	NotTrusted int `json:"not_trusted"`
}

// InterferencePct is a repeat's interference: other programs' CPU and
// steal on the busier of the client's and the server's host, in percent
// of one core; ok is false when neither was measured.
func InterferencePct(m map[string]float64) (pct float64, ok bool) {
	if f, has := m[ForeignCPUPct]; has {
		pct, ok = f+m[StealPct], true
	}
	if f, has := m[RemoteForeignCPUPct]; has {
		pct, ok = math.Max(pct, f+m[RemoteStealPct]), true
	}
	return pct, ok
}

// UsedRepeats are the repeats summaries and grades count: the successful
// ones, without the busy ones unless none is clean (a cell whose every
// repeat was busy keeps its values and is marked NotTrusted instead).
func UsedRepeats(reps []Repeat) []Repeat {
	var ok, clean []Repeat
	for _, r := range reps {
		if r.Error != "" {
			continue
		}
		ok = append(ok, r)
		if r.Busy == "" {
			clean = append(clean, r)
		}
	}
	if len(clean) > 0 {
		return clean
	}
	return ok
}

// CleanRepeats counts a run's successful repeats that are not busy, and
// its busy ones.
func CleanRepeats(reps []Repeat) (clean, busy int) {
	for _, r := range reps {
		switch {
		case r.Error != "":
		case r.Busy != "":
			busy++
		default:
			clean++
		}
	}
	return clean, busy
}

// EnoughClean is the rule for a cell's trust: at least half of the repeats
// asked for, and at least 2, are clean.
func EnoughClean(clean, asked int) bool {
	return clean >= 2 && 2*clean >= asked
}

// NotTrustedReason is a busy cell's verdict, with the median interference
// over its repeats.
func NotTrustedReason(reps []Repeat) string {
	var v []float64
	for _, r := range reps {
		if p, ok := InterferencePct(r.Metrics); ok && r.Error == "" {
			v = append(v, p)
		}
	}
	return fmt.Sprintf("not trusted: the host was busy (median %.0f %% of a core used by other programs)", stats.Summarize(v).Median)
}
