package result

import "strings"

// Profile summarises a cell's system-wide CPU profile (suite --cpu-profile,
// docs/profiles.md): where the file is and what it holds. The per-repeat
// CPU breakdown is in the repeats' metrics (cpu_share_*, cpu_incl_*), so
// that it is summarised and compared like any other metric.
type Profile struct {
	// File is the gzipped pprof profile, relative to the results file's
	// directory: every measured window of the cell, merged.
	File string `json:"file"`
	// Samples is the number of samples in File; Windows the windows
	// merged; Seconds the sampled time (windows × their length).
	Samples int64   `json:"samples"`
	Windows int     `json:"windows"`
	Seconds float64 `json:"seconds"`
	// Hz is the sampling rate per CPU; CPUs the CPUs sampled.
	Hz   int `json:"hz"`
	CPUs int `json:"cpus,omitempty"`
	// Top are the functions with the most samples of their own.
	Top []ProfileFunc `json:"top,omitempty"`
	// BPF is the share of all samples (%) in each BPF program, by name.
	BPF map[string]float64 `json:"bpf,omitempty"`
}

// ProfileFunc is one function of a profile's top list.
type ProfileFunc struct {
	Name string `json:"name"`
	// Family is its symbol family (docs/profiles.md).
	Family string `json:"family"`
	// SelfPct is the share of samples (%) whose leaf it is; TotalPct the
	// share with it anywhere on the stack.
	SelfPct  float64 `json:"self_pct"`
	TotalPct float64 `json:"total_pct"`
}

// Prefixes of the CPU-profile metrics: one per symbol family.
const (
	CPUSharePrefix = "cpu_share_"
	CPUInclPrefix  = "cpu_incl_"
)

// profileMetricInfo documents the per-family CPU-profile metrics.
func profileMetricInfo(name string) (MetricInfo, bool) {
	if f, ok := strings.CutPrefix(name, CPUSharePrefix); ok {
		return MetricInfo{"%", Neutral, "CPU profile: share of all samples (every CPU, idle included) whose stack's nearest family frame is in family " + f + " (exclusive: the families sum to 100 %; docs/profiles.md)"}, true
	}
	if f, ok := strings.CutPrefix(name, CPUInclPrefix); ok {
		return MetricInfo{"%", Neutral, "CPU profile: share of all samples with a frame of family " + f + " anywhere on the stack (inclusive, as a flamegraph's width; docs/profiles.md)"}, true
	}
	return MetricInfo{}, false
}
