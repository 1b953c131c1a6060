package main

import (
	"fmt"
	"io"

	"github.com/cnibench/cnibench/internal/profile"
)

// writeOverheadTable writes the profile-overhead figures per side: the
// client's and server's CPU over the measured window, the host's CPU per
// transaction or per 100 Gbit/s, and for the profiled side the samples per
// window, lost samples, the profiler's own CPU and the share of samples in
// other processes (how quiet the host was). Medians over the trials.
func writeOverheadTable(w io.Writer, cs []*ComparisonResult) {
	fmt.Fprintln(w, "Cost of sampling (medians over the trials; client/server CPU: each process's own CPU over the measured window, 100 = one core; "+
		"host CPU per unit: busy CPU of the host ÷ transactions, or × 100 Gbit/s ÷ throughput; "+
		"profiler CPU: the client's samples with a frame of package internal/profile — the reader thread draining the rings and reading /proc — "+
		"per second of window, and as a share of the client's CPU; other procs: samples in other processes than cnibench):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| env | test | side | client CPU % | server CPU % | host CPU per unit | samples per window | samples/s | lost (sum) | profiler CPU ms/s | profiler % of client CPU | other procs % |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range cs {
		for _, side := range []string{c.sideA(), c.Peer} {
			cell := func(key, format string) string {
				if v, ok := metricMedian(c, side, key); ok {
					return fmt.Sprintf(format, v)
				}
				return "–"
			}
			unit := cell("cpu_us_per_trans", "%.1f µs/trans")
			if c.Test == "tcp_stream" {
				unit = cell("cpu_pct_per_100gbit", "%.0f %%/100 Gbit/s")
			}
			lost := "–"
			if _, ok := metricMedian(c, side, profile.LostMetric); ok {
				var sum float64
				for _, t := range c.Trials {
					if t.Side == side {
						sum += t.Metrics[profile.LostMetric]
					}
				}
				lost = fmt.Sprintf("%.0f", sum)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Env, c.Test, side,
				cell("client_cpu_pct", "%.1f"), cell("server_cpu_pct", "%.1f"), unit,
				cell(profile.SamplesMetric, "%.0f"), cell("profile_samples_per_sec", "%.0f"), lost,
				cell("profiler_cpu_ms_per_sec", "%.1f"), cell("profiler_share_of_client_cpu_pct", "%.1f"),
				cell("cpu_share_other_procs", "%.1f"))
		}
	}
	fmt.Fprintln(w)
	for _, c := range cs {
		a, okA := metricMedian(c, c.sideA(), "client_cpu_pct")
		b, okB := metricMedian(c, c.Peer, "client_cpu_pct")
		if okA && okB {
			fmt.Fprintf(w, "- %s/%s: the profiled client's CPU over the window is %+.1f points of a core against the unprofiled one's (medians %.1f vs %.1f).\n",
				c.Env, c.Test, a-b, a, b)
		}
		if v, ok := metricMedian(c, c.sideA(), readerCPUMetric); ok {
			fmt.Fprintf(w, "- %s/%s: the reader thread's own CPU (Profile.ReaderCPU, reported by cnibench run): %.1f ms per window (median).\n",
				c.Env, c.Test, 1000*v)
		}
	}
	fmt.Fprintln(w)
}
