package main

import (
	"fmt"
	"io"

	"sort"
	"strings"
	"time"
)

// Report is the harness's JSON output (schema cnibench/peerbench/v2).
type Report struct {
	Schema      string              `json:"schema"`
	Plan        string              `json:"plan"`
	Start       time.Time           `json:"start"`
	End         time.Time           `json:"end"`
	Host        Host                `json:"host"`
	Tools       map[string]string   `json:"tools"`
	Config      map[string]string   `json:"config"`
	Comparisons []*ComparisonResult `json:"comparisons"`
	RSS         *RSSResult          `json:"rss,omitempty"`
	Errors      []string            `json:"errors,omitempty"`
	Interrupted bool                `json:"interrupted,omitempty"`
}

// RSSLimit is the target for cnibench's peak RSS with 1000 HTTP clients.
const RSSLimit = 64 << 20

// RSSResult is the memory target, from the http comparisons' cnibench trials.
type RSSResult struct {
	Clients int `json:"http_clients"`
	// ClientMaxRSS is cnibench's own client_max_rss_bytes over all trials.
	ClientMaxRSS *Spread `json:"client_max_rss_bytes,omitempty"`
	// TimeMaxRSS is GNU time's maximum RSS of the cnibench client process.
	TimeMaxRSS *Spread `json:"time_client_maxrss_bytes,omitempty"`
	// HeyMaxRSS and WrkMaxRSS are GNU time's maximum RSS of hey and wrk,
	// for reference.
	HeyMaxRSS *Spread `json:"hey_time_maxrss_bytes,omitempty"`
	WrkMaxRSS *Spread `json:"wrk_time_maxrss_bytes,omitempty"`
	// ServeVmHWM is the `cnibench serve` process's peak RSS per environment,
	// and the standalone HTTP server's for reference.
	ServeVmHWM      map[string]int64 `json:"serve_vmhwm_bytes,omitempty"`
	HTTPServerVmHWM map[string]int64 `json:"httpserver_vmhwm_bytes,omitempty"`
	Limit           int64            `json:"limit_bytes"`
	Met             *bool            `json:"met,omitempty"`
}

func (r *Report) finish(o options) {
	rss := &RSSResult{Clients: o.httpClients, Limit: RSSLimit, ServeVmHWM: map[string]int64{}, HTTPServerVmHWM: map[string]int64{}}
	var cliRSS, timeRSS, heyRSS, wrkRSS []float64
	for _, c := range r.Comparisons {
		var a, b []*float64
		var av, bv []float64
		for i := range c.Trials {
			t := &c.Trials[i]
			if t.Metrics["errors"] > 0 {
				c.Warnings = append(c.Warnings, fmt.Sprintf("round %d %s: %.0f failed transactions/requests", t.Round, t.Side, t.Metrics["errors"]))
			}
			for len(a) < t.Round {
				a, b = append(a, nil), append(b, nil)
			}
			if t.Value == nil {
				continue
			}
			if t.Side == c.sideA() {
				a[t.Round-1] = t.Value
				av = append(av, *t.Value)
				if c.Test == "http" {
					if v, ok := t.Metrics["client_max_rss_bytes"]; ok {
						cliRSS = append(cliRSS, v)
					}
					if v, ok := t.Metrics["time_client_maxrss_bytes"]; ok {
						timeRSS = append(timeRSS, v)
					}
				}
			} else {
				b[t.Round-1] = t.Value
				bv = append(bv, *t.Value)
				if v, ok := t.Metrics["time_client_maxrss_bytes"]; ok && c.Test == "http" {
					switch c.Peer {
					case "hey":
						heyRSS = append(heyRSS, v)
					case "wrk":
						wrkRSS = append(wrkRSS, v)
					}
				}
			}
		}
		if s, err := spread(av); err == nil {
			c.Cnibench = &s
		}
		if s, err := spread(bv); err == nil {
			c.PeerValue = &s
		}
		c.RatioValues = ratios(a, b)
		c.Kind = rowKind(c.Test, o.pin)
		if c.Peer == overheadB && o.pin != "none" {
			// Profiled against unprofiled is a goal unpinned only.
			c.Kind = KindExploratory
		}
		if len(o.deviations()) > 0 {
			c.Kind = KindExploratory
		}
		c.Verdict = VerdictInconclusive
		if s, err := spread(c.RatioValues); err == nil {
			c.Ratio = &s
			if s.N < o.rounds {
				c.Warnings = append(c.Warnings, fmt.Sprintf("only %d of %d rounds have both sides", s.N, o.rounds))
			}
		}
		if len(c.RatioValues) > 0 {
			var warn string
			c.CI, c.Verdict, warn = judge(c.RatioValues, c.Target)
			if warn != "" {
				c.Warnings = append(c.Warnings, warn)
			}
		}
		if c.Peer == "netperf" {
			if _, ok := metricMedian(c, c.Peer, "latency_us_p50"); !ok {
				c.Warnings = append(c.Warnings, "netperf reported no latency percentiles (built without --enable-histogram?): netperf's p50/p99 are absent")
			}
		}
		if c.Test == "http" {
			if v, ok := c.ServerVmHWM["cnibench serve"]; ok {
				rss.ServeVmHWM[c.Env] = v
			}
			if v, ok := c.ServerVmHWM["bench/httpserver"]; ok {
				rss.HTTPServerVmHWM[c.Env] = v
			}
		}
	}
	if s, err := spread(cliRSS); err == nil {
		rss.ClientMaxRSS = &s
		met := s.Max < RSSLimit
		if t, err := spread(timeRSS); err == nil {
			rss.TimeMaxRSS = &t
			met = met && t.Max < RSSLimit
		}
		rss.Met = &met
	}
	if s, err := spread(heyRSS); err == nil {
		rss.HeyMaxRSS = &s
	}
	if s, err := spread(wrkRSS); err == nil {
		rss.WrkMaxRSS = &s
	}
	if rss.ClientMaxRSS != nil || len(rss.ServeVmHWM) > 0 {
		r.RSS = rss
	}
}

func fmtValue(v float64, unit string) string {
	switch unit {
	case "bit/s":
		return fmt.Sprintf("%.2f Gbit/s", v/1e9)
	default:
		return fmt.Sprintf("%.0f %s", v, unit)
	}
}

func fmtSpreadValue(s *Spread, unit string) string {
	if s == nil {
		return "–"
	}
	return fmtValue(s.Median, unit)
}

func mib(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }

// fmtVerdict marks a missed target in bold.
func fmtVerdict(v string) string {
	switch v {
	case "":
		return "no data"
	case VerdictMissed:
		return "**missed**"
	default:
		return v
	}
}

func verdict(met *bool) string {
	switch {
	case met == nil:
		return "no data"
	case *met:
		return "met"
	default:
		return "**MISSED**"
	}
}

// median of a trial metric over one side's trials.
func metricMedian(c *ComparisonResult, side, key string) (float64, bool) {
	var vs []float64
	for _, t := range c.Trials {
		if t.Side == side && t.Error == "" {
			if v, ok := t.Metrics[key]; ok {
				vs = append(vs, v)
			}
		}
	}
	s, err := spread(vs)
	return s.Median, err == nil
}

func (r *Report) writeMarkdown(w io.Writer) {
	title := "cnibench vs peers"
	if r.Config["tests"] == overheadTest {
		title = "cnibench run with and without --cpu-profile"
	}
	fmt.Fprintf(w, "## %s, %s\n\n", title, r.Start.Format("2006-01-02 15:04 MST"))
	h := r.Host
	fmt.Fprintf(w, "Host: %s, %s, kernel %s, %d cores (%s), %.1f GiB; load average at start %s.  \n",
		h.Hostname, h.OS, h.Kernel, h.Cores, h.CPUModel, float64(h.MemBytes)/(1<<30), h.LoadAvg)
	pin := map[string]string{"none": "not pinned", "same": "servers and clients pinned to CPU 0", "split": "servers pinned to CPU 1, clients to CPU 0"}[r.Config["pin"]]
	fmt.Fprintf(w, "Config: %d rounds per comparison (order alternating), %s per trial (cnibench warm-up and iperf3 omit %s), %s clients / %s B body for http; %s.  \n",
		atoi(r.Config["rounds"]), r.Config["duration"], r.Config["warmup"], r.Config["http_clients"], r.Config["http_body"], pin)
	var tv []string
	for _, k := range sortedKeys(r.Tools) {
		tv = append(tv, fmt.Sprintf("%s: %s", k, r.Tools[k]))
	}
	fmt.Fprintf(w, "Tools: %s.\n\n", strings.Join(tv, "; "))
	if r.Plan != "" {
		fmt.Fprintf(w, "%s\n\n", r.Plan)
	}

	overhead := r.Config["tests"] == overheadTest
	if overhead {
		fmt.Fprintln(w, "| env | test | kind | profiled (median) | unprofiled | unprofiled (median) | rounds | ratio | 95 % interval | ratio median (min–max) | target | verdict |")
	} else {
		fmt.Fprintln(w, "| env | test | kind | cnibench (median) | peer | peer (median) | rounds | ratio | 95 % interval | ratio median (min–max) | target | verdict |")
	}
	fmt.Fprintln(w, "|---|---|---|---:|---|---:|---:|---:|---|---|---:|---|")
	for _, c := range r.Comparisons {
		est, ci, med := "–", "–", "–"
		if c.Ratio != nil {
			med = fmt.Sprintf("%.3f (%.3f–%.3f)", c.Ratio.Median, c.Ratio.Min, c.Ratio.Max)
		}
		n := 0
		if c.CI != nil {
			n = c.CI.N
			est = fmt.Sprintf("%.3f", c.CI.Estimate)
			ci = fmt.Sprintf("[%.3f, %.3f]", c.CI.Lo, c.CI.Hi)
		} else if c.Ratio != nil {
			n = c.Ratio.N
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d | %s | %s | %s | ≥ %.2f | %s |\n",
			c.Env, c.label(), c.Kind, fmtSpreadValue(c.Cnibench, c.Unit), c.PeerTest, fmtSpreadValue(c.PeerValue, c.Unit),
			n, est, ci, med, c.Target, fmtVerdict(c.Verdict))
	}
	fmt.Fprintln(w)

	if r.RSS != nil {
		fmt.Fprintf(w, "Memory with %d non-keep-alive HTTP clients (target: cnibench < %s):\n\n", r.RSS.Clients, mib(RSSLimit))
		fmt.Fprintln(w, "| what | min | median | max | verdict |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---|")
		row := func(name string, s *Spread, v string) {
			if s != nil {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, mib(s.Min), mib(s.Median), mib(s.Max), v)
			}
		}
		row("cnibench client `client_max_rss_bytes`", r.RSS.ClientMaxRSS, verdict(r.RSS.Met))
		row("cnibench client, GNU time max RSS (cross-check)", r.RSS.TimeMaxRSS, "")
		row("hey, GNU time max RSS (reference)", r.RSS.HeyMaxRSS, "")
		row("wrk, GNU time max RSS (reference)", r.RSS.WrkMaxRSS, "")
		for _, env := range sortedKeys(r.RSS.HTTPServerVmHWM) {
			v := float64(r.RSS.HTTPServerVmHWM[env])
			fmt.Fprintf(w, "| bench/httpserver (the server both clients hit) VmHWM, %s | | | %s | |\n", env, mib(v))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintln(w, "Secondary figures (medians over the trials; client CPU = GNU time user+sys / wall time of the client process, incl. cnibench's warm-up; "+
		"http client CPU per request: cnibench's own CPU over the measured window ÷ its requests, the peer's GNU time CPU ÷ its responses):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| env | test | side | p50 µs | p99 µs | client CPU % | client CPU µs/req | client max RSS | errors (sum) | retransmits (median) |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range r.Comparisons {
		for _, side := range []string{c.sideA(), c.Peer} {
			cell := func(key string, f func(float64) string) string {
				if v, ok := metricMedian(c, side, key); ok {
					return f(v)
				}
				return "–"
			}
			cpu := "–"
			if cs, ok := metricMedian(c, side, "time_client_cpu_sec"); ok {
				if el, ok := metricMedian(c, side, "time_elapsed_sec"); ok && el > 0 {
					cpu = fmt.Sprintf("%.0f", 100*cs/el)
				}
			}
			var errs float64
			for _, t := range c.Trials {
				if t.Side == side {
					errs += t.Metrics["errors"]
				}
			}
			f0 := func(v float64) string { return fmt.Sprintf("%.0f", v) }
			f1 := func(v float64) string { return fmt.Sprintf("%.1f", v) }
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s |\n", c.Env, c.label(), side,
				cell("latency_us_p50", f0), cell("latency_us_p99", f0), cpu, cell("client_cpu_us_per_req", f1),
				cell("time_client_maxrss_bytes", mib), errs, cell("tcp_retransmits", f0))
		}
	}
	fmt.Fprintln(w)

	var warn []string
	for _, c := range r.Comparisons {
		for _, x := range c.Warnings {
			warn = append(warn, fmt.Sprintf("%s/%s: %s", c.Env, c.label(), x))
		}
		for _, t := range c.Trials {
			if t.Error != "" {
				warn = append(warn, fmt.Sprintf("%s/%s round %d %s failed: %s", c.Env, c.label(), t.Round, t.Side, t.Error))
			}
		}
	}
	warn = append(warn, r.Errors...)
	if r.Interrupted {
		warn = append(warn, "the run was interrupted: incomplete")
	}
	if len(warn) > 0 {
		fmt.Fprintln(w, "Warnings and errors:")
		fmt.Fprintln(w)
		for _, x := range warn {
			fmt.Fprintf(w, "- %s\n", x)
		}
		fmt.Fprintln(w)
	}
	if overhead {
		writeOverheadTable(w, r.Comparisons)
		fmt.Fprintln(w, "Per-round ratios (profiled/unprofiled, in round order):")
	} else {
		fmt.Fprintln(w, "Per-round ratios (cnibench/peer, in round order):")
	}
	fmt.Fprintln(w)
	for _, c := range r.Comparisons {
		var rs []string
		for _, v := range c.RatioValues {
			rs = append(rs, fmt.Sprintf("%.3f", v))
		}
		fmt.Fprintf(w, "- %s/%s: %s (load avg %s → %s)\n", c.Env, c.label(), strings.Join(rs, " "), c.LoadBefore, c.LoadAfter)
	}
	fmt.Fprintln(w)
}

// label is the comparison's name in the report ("http vs wrk").
func (c *ComparisonResult) label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Test
}

func atoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n)
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
