package proxies

import "github.com/cnibench/cnibench/internal/procfs"

// cpuMetrics turns each role's CPU ticks over a span into the cell's
// metrics: per role and summed, in seconds and in % of one core.
func cpuMetrics(ticks map[string]uint64, span float64) map[string]float64 {
	m := map[string]float64{}
	if span <= 0 || len(ticks) == 0 {
		return m
	}
	var total uint64
	for role, t := range ticks {
		s := float64(t) / procfs.UserHZ
		m[RoleMetric(role, "cpu_seconds")] = s
		m[RoleMetric(role, "cpu_pct")] = 100 * s / span
		total += t
	}
	m[MetricCPUSeconds] = float64(total) / procfs.UserHZ
	m[MetricCPUPct] = 100 * float64(total) / procfs.UserHZ / span
	return m
}
