package report

import (
	"fmt"

	"github.com/cnibench/cnibench/pkg/result"
)

// InterferenceNote is the first line of a report and of the suite's
// terminal table: how busy the host was with other programs and what that
// touched (docs/interference.md); "" for documents without the figures.
func InterferenceNote(set *result.Set) string {
	in := set.Interference
	if in == nil {
		return ""
	}
	idle := ""
	switch {
	case in.IdleError != "":
		idle = "; the idle probe failed: " + in.IdleError
	case in.IdleSeconds > 0:
		idle = fmt.Sprintf("; %.0f %% before the run (idle probe, steal %.0f %%)", in.IdleForeignPct, in.IdleStealPct)
	}
	during := "no window measured it"
	if in.Repeats > 0 {
		during = fmt.Sprintf("a median %.0f %% of a core during the measured windows (at most %.0f %%)", in.MedianPct, in.MaxPct)
	}
	if in.ThresholdPct <= 0 {
		return fmt.Sprintf("Other programs on the host used %s%s; busy repeats were not marked (--busy-threshold 0).", during, idle)
	}
	if in.Busy == 0 {
		return fmt.Sprintf("The host was quiet: other programs used %s%s; no repeat passed the %.0f %% threshold.", during, idle, in.ThresholdPct)
	}
	// busy throughout, or at times only (most windows below the threshold)
	busy := "busy"
	if in.Repeats > 0 && in.MedianPct < in.ThresholdPct {
		busy = "busy at times"
	}
	s := fmt.Sprintf("The host was %s: other programs used %s%s. %d of %d repeats passed the %.0f %% threshold, in %d of %d cells",
		busy, during, idle, in.Busy, in.Repeats, in.ThresholdPct, in.Touched, in.Cells)
	if in.Reruns > 0 {
		s += fmt.Sprintf("; %d repeats were measured again", in.Reruns)
	}
	if in.NotTrusted > 0 {
		s += fmt.Sprintf("; %d cells are not trusted (too few clean repeats) and not graded.", in.NotTrusted)
	} else {
		s += "; every cell kept enough clean repeats, and only those are graded."
	}
	return s
}
