// Package trendtest builds synthetic series of results documents for the
// trend report's tests: chosen levels per point, seeded noise per repeat.
package trendtest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// Spec describes a series.
type Spec struct {
	// Datapaths and Tests span the cells of every point (path cross-node,
	// one flow); defaults: bridge and tcp_stream.
	Datapaths []string
	Tests     []string
	// Levels multiply the primary metric (throughput or transaction
	// rate) of the Affected datapaths at each point; len(Levels) is the
	// number of points. Affected nil: every datapath.
	Levels   []float64
	Affected []string
	// Repeats per run (default 5) and the relative standard deviation of
	// every repeat's values (default 0.01).
	Repeats int
	Noise   float64
	Seed    uint64
	// Extra labels added to every run of point i by Labels(i) (nil: none),
	// e.g. a version label that changes from point to point.
	Labels func(i int) map[string]string
}

var base = map[string]float64{
	result.ThroughputBitsPerSec: 9.4e9,
	result.TransPerSec:          52000,
	result.LatencyUsP99:         61,
	result.CPUPctPer100Gbit:     180,
	result.CPUUsPerTrans:        23,
	result.LossPct:              0.4,
}

// Series returns one results document per level, a day apart from
// 2026-01-01, tool version v0.<i>.0.
func Series(s Spec) []*result.Set {
	if len(s.Datapaths) == 0 {
		s.Datapaths = []string{"bridge"}
	}
	if len(s.Tests) == 0 {
		s.Tests = []string{result.TestTCPStream}
	}
	if s.Repeats == 0 {
		s.Repeats = 5
	}
	if s.Noise == 0 {
		s.Noise = 0.01
	}
	affected := map[string]bool{}
	for _, d := range s.Affected {
		affected[d] = true
	}
	rng := rand.New(rand.NewPCG(s.Seed, 2))
	t0 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	var out []*result.Set
	for i, lvl := range s.Levels {
		start := t0.Add(time.Duration(i) * 24 * time.Hour)
		set := &result.Set{
			Schema: result.SchemaResults,
			Tool:   result.Tool{Name: "cnibench", Version: fmt.Sprintf("v0.%d.0", i), Commit: fmt.Sprintf("%07x", 0xabc000+i)},
			Start:  start, End: start.Add(time.Hour),
			Host: result.Host{Hostname: "ci", Kernel: "6.18.0", CPUModel: "test CPU", Cores: 2},
		}
		for _, dp := range s.Datapaths {
			for _, test := range s.Tests {
				labels := map[string]string{report.LabelDatapath: dp, report.LabelPath: "cross-node", report.LabelTest: test, report.LabelFlows: "1"}
				if s.Labels != nil {
					for k, v := range s.Labels(i) {
						labels[k] = v
					}
				}
				run := result.Run{Labels: labels}
				for r := 0; r < s.Repeats; r++ {
					rep := result.Repeat{Index: r, Start: start.Add(time.Duration(r) * time.Minute), DurationSec: 10, Metrics: map[string]float64{}}
					for _, m := range report.DefaultMetrics(test) {
						v := base[m]
						if m == report.PrimaryMetric(test) && (len(affected) == 0 || affected[dp]) {
							v *= lvl
						}
						rep.Metrics[m] = v * (1 + s.Noise*rng.NormFloat64())
					}
					run.Repeats = append(run.Repeats, rep)
				}
				run.Summary = result.SummarizeRepeats(run.Repeats)
				set.Runs = append(set.Runs, run)
			}
		}
		out = append(out, set)
	}
	return out
}

// Step returns n levels of 1 that become f from index at on.
func Step(n, at int, f float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
		if i >= at {
			out[i] = f
		}
	}
	return out
}
