package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// IsShare reports whether metric is a CPU-profile share of the samples in
// percent (cpu_share_*, cpu_incl_*): its change is stated in percentage
// points ("+18.0 pp"), not in percent of itself.
func IsShare(metric string) bool {
	return strings.HasPrefix(metric, result.CPUSharePrefix) || strings.HasPrefix(metric, result.CPUInclPrefix)
}

// minDefaultSharePct: a family's exclusive share is compared by default
// when its median reaches this in a run of the row.
const minDefaultSharePct = 0.5

// shareMetrics are the default CPU-profile metrics of a row: the
// exclusive share of every family at least minDefaultSharePct in one of
// the runs.
func shareMetrics(runs []*result.Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		if r == nil {
			continue
		}
		for _, rep := range r.Repeats {
			for k := range rep.Metrics {
				if !strings.HasPrefix(k, result.CPUSharePrefix) || seen[k] {
					continue
				}
				if s, ok := report.Summary(r, k); ok && s.Median >= minDefaultSharePct {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// signedPP is "+18.0 pp" or "−12.1 pp".
func signedPP(d float64) string {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return "—"
	}
	if math.Abs(d) < 0.05 {
		d = 0
	}
	return strings.Replace(fmt.Sprintf("%+.1f pp", d), "-", "−", 1)
}

// profileNotes count, per NEW file, the cells CPU-profiled on one side
// only: their labels differ by cpu_profile, so they never match.
func profileNotes(inputs []Input, index []map[string]*result.Run) []string {
	strip := func(l map[string]string) string {
		c := make(map[string]string, len(l))
		for k, v := range l {
			if k != report.LabelCPUProfile {
				c[k] = v
			}
		}
		return result.LabelKey(c)
	}
	type sides struct{ profiled, plain bool }
	cells := func(i int) map[string]sides {
		out := map[string]sides{}
		for _, run := range index[i] {
			k := strip(run.Labels)
			s := out[k]
			if run.Labels[report.LabelCPUProfile] != "" {
				s.profiled = true
			} else {
				s.plain = true
			}
			out[k] = s
		}
		return out
	}
	old := cells(0)
	var notes []string
	for i := 1; i < len(inputs); i++ {
		newOnly, oldOnly := 0, 0
		for k, n := range cells(i) {
			o, ok := old[k]
			if !ok {
				continue
			}
			if n.profiled && !o.profiled && o.plain {
				newOnly++
			}
			if o.profiled && !n.profiled && n.plain {
				oldOnly++
			}
		}
		for _, c := range []struct {
			n     int
			where string
		}{{newOnly, inputs[i].Name + " (NEW) only"}, {oldOnly, inputs[0].Name + " (OLD) only, not in " + inputs[i].Name}} {
			if c.n > 0 {
				notes = append(notes, fmt.Sprintf("%d %s CPU-profiled in %s: not compared (a profiled cell, label %s=on, is never compared with an unprofiled one: sampling costs CPU).",
					c.n, plural(c.n, "cell", "cells"), c.where, report.LabelCPUProfile))
			}
		}
	}
	return notes
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
