package suite

import (
	"context"
	"fmt"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
	"time"
)

// Interference is the suite's rule for repeats measured while other
// programs competed for the host (docs/interference.md): a repeat whose
// window saw other programs' CPU and steal (result.InterferencePct) above
// ThresholdPct is marked busy; at the end of the run the cells left with
// too few clean repeats (result.EnoughClean) are measured again, Retries
// rounds at most, keeping every repeat; a cell still short of clean
// repeats is marked not trusted. The zero value is off.
type Interference struct {
	// ThresholdPct is in percent of one core; 0 turns marking off.
	ThresholdPct float64
	// Retries bounds the rounds of re-runs at the end (0: none).
	Retries int
	// IdleProbe is how long the host is watched before the first
	// measurement (0: not probed).
	IdleProbe time.Duration
}

// DefaultBusyThresholdPct lies between a quiet host (other programs counted
// process by process: 0 % of a core, p90 0 %) and the smallest CPU hog that
// has moved the quick profile's figures: half a core, counted 48–54 % in the
// windows, moved throughput by up to 14 % in one of two measurements; one
// core (97–104 %) moved tcp_rr and tcp_crr latency by 14–24 %
// (docs/interference.md, docs/data/interference-2026-12-04b/).
const DefaultBusyThresholdPct = 25

// DefaultBusyRetries and DefaultIdleProbe are the CLI's defaults.
const (
	DefaultBusyRetries = 1
	DefaultIdleProbe   = 2 * time.Second
)

func (i Interference) validate() error {
	if i.ThresholdPct < 0 {
		return fmt.Errorf("--busy-threshold %g: must be at least 0 (percent of one core; 0 turns it off)", i.ThresholdPct)
	}
	if i.Retries < 0 || i.Retries > 10 {
		return fmt.Errorf("--busy-retries %d: must be between 0 and 10", i.Retries)
	}
	if i.IdleProbe < 0 || i.IdleProbe > time.Minute {
		return fmt.Errorf("--idle-probe %s: must be between 0 and 1m", i.IdleProbe)
	}
	return nil
}

// probeIdle watches the host for the idle probe's length before the first
// measurement: /proc/stat's process CPU less this process's own (and its
// children's) is other programs'. The run's servers are up but idle; what
// little they use counts as other programs'.
func (st *state) probeIdle(ctx context.Context) {
	d := st.o.Interference.IdleProbe
	if d <= 0 {
		return
	}
	in := &result.Interference{ThresholdPct: st.o.Interference.ThresholdPct}
	st.mu.Lock()
	st.set.Interference = in
	st.mu.Unlock()
	f, steal, err := hoststat.ProbeForeign(ctx, d)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		in.IdleError = err.Error()
		st.warnOnce("the host's idle load was not measured: " + err.Error())
		return
	}
	in.IdleSeconds, in.IdleForeignPct, in.IdleStealPct = d.Seconds(), f, steal
	where := "this host"
	if st.backend.Name() != "lab" {
		where = "the suite's machine; a cluster's nodes are measured in each window"
	}
	st.progressf("idle load before the run: other programs used %.0f %% of a core, steal %.0f %% (%s, %s)", f, steal, d, where)
	if t := in.ThresholdPct; t > 0 && f+steal > t {
		st.warnOnce(fmt.Sprintf("the host was busy before the run: other programs used %.0f %% of a core (steal %.0f %%), above the %.0f %% at which a repeat is marked busy; expect re-runs and cells not trusted", f, steal, t))
	}
}

// markBusy marks the repeats whose interference passed the threshold and
// returns the progress line's note for them.
func (st *state) markBusy(reps []result.Repeat) string {
	t := st.o.Interference.ThresholdPct
	note := ""
	for i := range reps {
		p, ok := result.InterferencePct(reps[i].Metrics)
		if !ok || reps[i].Error != "" {
			continue
		}
		if t > 0 && p > t {
			reps[i].Busy = fmt.Sprintf("other programs used %.0f %% of a core (threshold %.0f %%)", p, t)
			note = fmt.Sprintf(" · busy: other programs %.0f %% of a core", p)
		}
	}
	return note
}

// rerunBusy measures again, after the last repeat, the cells with busy
// repeats that are short of the repeats asked for in clean ones: each
// round runs, per such cell, as many repeats as it is short (at most as
// many as it has busy ones), in the plan's points. Every repeat is kept.
func (st *state) rerunBusy(ctx context.Context, points []*point) {
	if st.o.Interference.ThresholdPct <= 0 {
		return
	}
	for round := 1; round <= st.o.Interference.Retries && ctx.Err() == nil; round++ {
		need := map[string]int{}
		most, total := 0, 0
		for _, pt := range points {
			for _, c := range pt.cells {
				n := st.shortOfClean(result.LabelKey(c.labels()))
				if n > 0 {
					need[result.LabelKey(c.labels())] = n
					most, total = max(most, n), total+n
				}
			}
		}
		if total == 0 {
			return
		}
		st.mu.Lock()
		st.total += total
		st.rerun = true
		st.mu.Unlock()
		st.progressf("re-running %d busy repeat(s) of %d cell(s) (round %d of %d)", total, len(need), round, st.o.Interference.Retries)
		for k := 0; k < most && ctx.Err() == nil; k++ {
			for _, pt := range points {
				var cells []cell
				for _, c := range pt.cells {
					if need[result.LabelKey(c.labels())] > k {
						cells = append(cells, c)
					}
				}
				if len(cells) > 0 && ctx.Err() == nil {
					st.runPoint(ctx, pt, cells, st.o.Repeat+k, points)
				}
			}
		}
	}
}

// shortOfClean is how many repeats a run lacks in clean ones, bounded by
// its busy ones (a failed repeat is not re-run for this).
func (st *state) shortOfClean(key string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	r := st.runs[key]
	if r == nil {
		return 0
	}
	clean, busy := result.CleanRepeats(r.Repeats)
	return min(busy, st.o.Repeat-clean)
}

// judgeTrust marks the runs left without enough clean repeats and sums up
// the run's interference in the set.
func (st *state) judgeTrust() {
	st.mu.Lock()
	defer st.mu.Unlock()
	in := st.set.Interference
	if in == nil {
		in = &result.Interference{ThresholdPct: st.o.Interference.ThresholdPct}
	}
	var all []float64
	for _, r := range st.runs {
		in.Cells++
		clean, busy := result.CleanRepeats(r.Repeats)
		for _, rep := range r.Repeats {
			if p, ok := result.InterferencePct(rep.Metrics); ok && rep.Error == "" {
				all = append(all, p)
				in.MaxPct = max(in.MaxPct, p)
			}
			if rep.Rerun {
				in.Reruns++
			}
		}
		in.Busy += busy
		if busy == 0 {
			continue
		}
		in.Touched++
		if !result.EnoughClean(clean, st.o.Repeat) {
			r.NotTrusted = result.NotTrustedReason(r.Repeats)
			in.NotTrusted++
		}
	}
	if len(all) == 0 && st.set.Interference == nil {
		return // nothing measured (scenario clients without the engine's windows)
	}
	in.Repeats = len(all)
	in.MedianPct = stats.Summarize(all).Median
	st.set.Interference = in
}
