package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/profile"
	pprof "github.com/google/pprof/profile"
)

// The profile-overhead comparisons (-tests profile-overhead, issue 24 item
// 1): what `cnibench run --cpu-profile` costs the measurement it profiles.
// Side A is `cnibench run … --cpu-profile FILE` (every CPU sampled at the
// default 999 Hz during the measured window), side B the same run without
// it, against the same `cnibench serve`, rounds alternating as in the plan.
const (
	// overheadTest is the -tests value that selects these comparisons.
	overheadTest = "profile-overhead"
	// overheadA and overheadB name the two sides in trials and reports.
	overheadA = "profiled"
	overheadB = "unprofiled"
	// overheadTarget: the profiled rate must be at least this fraction of
	// the unprofiled one (sampling costs at most 5 %), fixed before any
	// measurement (plan.go, docs/benchmarks.md).
	overheadTarget = 0.95
	// profilerFuncPrefix starts the names of the sampler's own functions
	// (package internal/profile): the client's samples with such a frame
	// are the profiler's CPU inside the measured window.
	profilerFuncPrefix = "github.com/cnibench/cnibench/internal/profile."
	// readerCPUMetric is the reader thread's CPU (Profile.ReaderCPU) per
	// repeat, in seconds, if `cnibench run --cpu-profile` reports it.
	readerCPUMetric = "cpu_profile_reader_cpu_sec"
)

// overheadComparisons are the profile-overhead comparisons, in run order:
// one flow of tcp_rr and of tcp_stream, each profiled against unprofiled.
var overheadComparisons = []*Comparison{
	{Test: "tcp_rr", Label: "tcp_rr profiled/unprofiled", Overhead: true, Peer: overheadB,
		PeerTest: "the same cnibench run without --cpu-profile", Unit: "trans/s", Metric: "trans_per_sec", Target: overheadTarget},
	{Test: "tcp_stream", Label: "tcp_stream profiled/unprofiled", Overhead: true, Peer: overheadB,
		PeerTest: "the same cnibench run without --cpu-profile", Unit: "bit/s", Metric: "throughput_rx_bits_per_sec", Target: overheadTarget},
}

// overheadPlanText is the profile-overhead part of the plan header.
func overheadPlanText() string {
	return fmt.Sprintf("Targets: the profiled run's rate ≥ %.2f × the unprofiled run's, for tcp_rr (trans/s) and tcp_stream "+
		"(received bit/s), 1 flow each: `cnibench run --cpu-profile` sampling every CPU at %d Hz costs the measurement at most %.0f %% "+
		"(unpinned: goal; any -pin: exploratory). Side A: `cnibench run … --cpu-profile FILE`; side B: the same run without it; "+
		"the same `cnibench serve`; in the interval, cnibench/peer reads profiled/unprofiled.", overheadTarget, profile.DefaultHz, 100*(1-overheadTarget))
}

// profilerCost is what a profile file says about the sampler's own cost.
type profilerCost struct {
	// Samples is every sample in the file; Window the time sampling was
	// enabled.
	Samples int
	Window  time.Duration
	// ProfilerSamples are the samples with a frame of the sampler's own
	// code (profilerFuncPrefix), ProfilerCPU their CPU time (the sum of
	// their sampling periods): the reader thread draining the rings and
	// reading /proc, and the session's calls from the engine, inside the
	// window. The kernel's per-sample interrupt work is not in it: it is
	// charged to the interrupted tasks (the A/B ratio captures it).
	ProfilerSamples int
	ProfilerCPU     time.Duration
}

// readProfilerCost reads a profile written by `cnibench run --cpu-profile`
// and measures the sampler's own samples in it.
func readProfilerCost(path string) (profilerCost, error) {
	p, err := profile.ReadFile(path)
	if err != nil {
		return profilerCost{}, err
	}
	return profilerCostOf(p)
}

// profilerCostOf measures the sampler's own samples in p.
func profilerCostOf(p *profile.Profile) (profilerCost, error) {
	c := profilerCost{Samples: p.Samples, Window: p.Window}
	if p.P == nil {
		return c, errors.New("profile: no samples")
	}
	cpuIdx := -1
	for i, st := range p.P.SampleType {
		if st.Type == "cpu" {
			cpuIdx = i
		}
	}
	if cpuIdx < 0 {
		return c, errors.New("profile: no cpu sample type (not written by cnibench --cpu-profile?)")
	}
	for _, s := range p.P.Sample {
		if !hasFuncPrefix(s, profilerFuncPrefix) || cpuIdx >= len(s.Value) {
			continue
		}
		c.ProfilerSamples += int(s.Value[0])
		c.ProfilerCPU += time.Duration(s.Value[cpuIdx])
	}
	return c, nil
}

// metrics are the cost's figures as trial metrics.
func (c profilerCost) metrics() map[string]float64 {
	m := map[string]float64{
		"profile_samples":           float64(c.Samples),
		"profile_window_sec":        c.Window.Seconds(),
		"profiler_samples":          float64(c.ProfilerSamples),
		"profiler_cpu_sec":          c.ProfilerCPU.Seconds(),
		"profile_samples_per_sec":   0,
		"profiler_cpu_ms_per_sec":   0,
		"profiler_share_of_all_pct": 0,
	}
	if w := c.Window.Seconds(); w > 0 {
		m["profile_samples_per_sec"] = float64(c.Samples) / w
		m["profiler_cpu_ms_per_sec"] = 1000 * c.ProfilerCPU.Seconds() / w
	}
	if c.Samples > 0 {
		m["profiler_share_of_all_pct"] = 100 * float64(c.ProfilerSamples) / float64(c.Samples)
	}
	return m
}

// hasFuncPrefix reports whether a frame of s is a function whose name
// starts with prefix.
func hasFuncPrefix(s *pprof.Sample, prefix string) bool {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil && strings.HasPrefix(ln.Function.Name, prefix) {
				return true
			}
		}
	}
	return false
}

// sideA is the name of side A's trials: "cnibench", or Side when set.
func (c *ComparisonResult) sideA() string {
	if c.Side != "" {
		return c.Side
	}
	return "cnibench"
}

// profiledTrial runs side A of a profile-overhead comparison: the cnibench
// trial with --cpu-profile into a file of the run's temporary directory,
// then the sampler's own cost measured in that profile (the file is
// removed). A trial that wrote no profile or no samples failed: it was not
// profiled.
func profiledTrial(ctx context.Context, o options, tools *Tools, env *Env, c *Comparison, round int) (float64, map[string]float64, error) {
	path := filepath.Join(tools.Dir, fmt.Sprintf("profile-%s-%s-%d.pb.gz", env.Name, c.Test, round))
	defer os.Remove(path)
	v, m, err := cnibenchTrial(ctx, o, tools, env, c, path)
	if err != nil {
		return v, m, err
	}
	if m[profile.SamplesMetric] <= 0 {
		return 0, m, fmt.Errorf("cnibench --cpu-profile: no %s in the result: the window was not profiled", profile.SamplesMetric)
	}
	cost, err := readProfilerCost(path)
	if err != nil {
		return 0, m, fmt.Errorf("cnibench --cpu-profile: %w", err)
	}
	for k, x := range cost.metrics() {
		m[k] = x
	}
	if pct := m["client_cpu_pct"]; pct > 0 && cost.Window > 0 {
		// The profiler's CPU as a share of the client process's, both
		// over the window.
		m["profiler_share_of_client_cpu_pct"] = 100 * (cost.ProfilerCPU.Seconds() / cost.Window.Seconds()) / (pct / 100)
	}
	return v, m, nil
}
