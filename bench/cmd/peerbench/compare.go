package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/bench/parse"
	"github.com/cnibench/cnibench/internal/profile"
)

// Comparison is cnibench's test A against a peer B on the same kind of
// server, with the target for the ratio A/B (see decide).
type Comparison struct {
	Test     string  // cnibench test (-tests selects every comparison of a test)
	Peer     string  // netperf, iperf3, hey, wrk
	PeerTest string  // how the peer is run, for the report
	Unit     string  // of the compared value
	Metric   string  // cnibench metric compared
	Target   float64 // the ratio's 95 % interval must lie at or above Target (plan.go)
	// Label is the name in reports when set (else Name's rule).
	Label string
	// Overhead: a profile-overhead comparison (overhead.go): side A is
	// cnibench with --cpu-profile, side B (Peer) the same run without it.
	Overhead bool
}

var comparisons = []*Comparison{
	{Test: "tcp_rr", Peer: "netperf", PeerTest: "netperf -t TCP_RR", Unit: "trans/s", Metric: "trans_per_sec", Target: 0.95},
	{Test: "tcp_crr", Peer: "netperf", PeerTest: "netperf -t TCP_CRR", Unit: "trans/s", Metric: "trans_per_sec", Target: 0.95},
	{Test: "tcp_stream", Peer: "iperf3", PeerTest: "iperf3 -c (1 stream)", Unit: "bit/s", Metric: "throughput_rx_bits_per_sec", Target: 0.95},
	{Test: "http", Peer: "hey", PeerTest: "hey -disable-keepalive", Unit: "req/s", Metric: "trans_per_sec", Target: 1.0},
	{Test: "http", Peer: "wrk", PeerTest: `wrk -t ` + strconv.Itoa(wrkThreads) + ` -H "Connection: close"`, Unit: "req/s", Metric: "trans_per_sec", Target: 1.0},
}

// wrkThreads is wrk's -t: one event-loop thread per core of this 2-core
// machine (wrk's own advice: threads = cores; -c is split between them).
const wrkThreads = 2

// comparisonByTest is test's first comparison (nil if none).
func comparisonByTest(t string) *Comparison {
	if cs := comparisonsByTest(t); len(cs) > 0 {
		return cs[0]
	}
	return nil
}

// comparisonsByTest is every comparison of test, in the plan's order: http
// has two, against hey and against wrk; profile-overhead selects its own
// (tcp_rr and tcp_stream, profiled against unprofiled).
func comparisonsByTest(t string) []*Comparison {
	if t == overheadTest {
		return overheadComparisons
	}
	var out []*Comparison
	for _, c := range comparisons {
		if c.Test == t {
			out = append(out, c)
		}
	}
	return out
}

// Name is the comparison's name in reports: its Label if set, else the
// test, with the peer when the test has more than one comparison ("http vs
// wrk").
func (c *Comparison) Name() string {
	if c.Label != "" {
		return c.Label
	}
	if c.Peer != "hey" && len(comparisonsByTest(c.Test)) > 1 {
		return c.Test + " vs " + c.Peer
	}
	return c.Test
}

// Trial is one run of one side.
type Trial struct {
	Round int       `json:"round"`
	Side  string    `json:"side"`  // "cnibench" or the peer's name
	Order int       `json:"order"` // 1 = ran first in its round, 2 = second
	Start time.Time `json:"start"`
	// Value is the compared figure (Comparison.Unit); absent when failed.
	Value *float64 `json:"value,omitempty"`
	// Metrics are secondary figures: latency, client CPU and RSS (GNU time),
	// errors, retransmits, ...
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Error   string             `json:"error,omitempty"`
}

// ComparisonResult is one comparison in one environment.
type ComparisonResult struct {
	Env  string `json:"env"`
	Test string `json:"test"`
	Name string `json:"name,omitempty"` // Comparison.Name when it is not Test
	// Side is side A's name in Trials when it is not "cnibench"
	// (profile-overhead: "profiled"); Peer is side B's.
	Side     string  `json:"side,omitempty"`
	Peer     string  `json:"peer"`
	PeerTest string  `json:"peer_test"`
	Unit     string  `json:"unit"`
	Target   float64 `json:"target_ratio"`
	Trials   []Trial `json:"trials"`
	// Filled in by Report.finish.
	Cnibench    *Spread   `json:"cnibench,omitempty"`
	PeerValue   *Spread   `json:"peer_value,omitempty"`
	RatioValues []float64 `json:"ratios"`
	Ratio       *Spread   `json:"ratio,omitempty"`
	// CI is the ratio's estimate and 95 % interval (absent with too few
	// rounds); Verdict is decide's: met, missed or inconclusive.
	CI      *RatioCI `json:"ratio_ci,omitempty"`
	Verdict string   `json:"verdict"`
	// Kind is goal, stretch or exploratory (rowKind; exploratory too when
	// the run does not follow the plan).
	Kind string `json:"kind"`
	// ServerVmHWM is each server's peak RSS over the comparison (bytes).
	ServerVmHWM map[string]int64 `json:"server_vmhwm_bytes,omitempty"`
	LoadBefore  string           `json:"loadavg_before"`
	LoadAfter   string           `json:"loadavg_after"`
	Warnings    []string         `json:"warnings,omitempty"`
}

func runComparison(ctx context.Context, o options, tools *Tools, env *Env, c *Comparison) (_ *ComparisonResult, err error) {
	res := &ComparisonResult{
		Env: env.Name, Test: c.Test, Peer: c.Peer, PeerTest: c.PeerTest, Unit: c.Unit, Target: c.Target,
		LoadBefore: loadAvg(), ServerVmHWM: map[string]int64{},
	}
	if n := c.Name(); n != c.Test {
		res.Name = n
	}
	if c.Overhead {
		res.Side = overheadA
	}
	what := "cnibench"
	if c.Overhead {
		what = "cnibench run --cpu-profile"
	}
	logf("%s/%s: %s vs %s, %d rounds of %v", env.Name, c.Test, what, c.PeerTest, o.rounds, o.duration)

	var servers []*Server
	defer func() {
		var errs []error
		for _, s := range servers {
			if hwm, herr := s.VmHWM(); herr == nil {
				res.ServerVmHWM[s.Name] = hwm
			}
			errs = append(errs, s.Stop())
		}
		err = errors.Join(append([]error{err}, errs...)...)
	}()
	start := func(name string, port int, argv []string) error {
		s, err := startServer(ctx, env, name, port, argv)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		return nil
	}
	hostPort := func(p int) string { return net.JoinHostPort(env.ServerIP, strconv.Itoa(p)) }
	if err := start("cnibench serve", portCnibench, []string{tools.Cnibench, "serve", "--listen", hostPort(portCnibench)}); err != nil {
		return res, err
	}
	switch c.Peer {
	case "netperf":
		err = start("netserver", portNetserver, []string{tools.Netserver, "-D", "-4", "-L", env.ServerIP, "-p", strconv.Itoa(portNetserver)})
	case "iperf3":
		err = start("iperf3 -s", portIperf3, []string{tools.Iperf3, "-s", "-B", env.ServerIP, "-p", strconv.Itoa(portIperf3)})
	case overheadB:
		// The unprofiled side runs against the same cnibench serve.
	case "hey", "wrk":
		err = start("bench/httpserver", portHTTP, []string{tools.HTTPServer, "--listen", hostPort(portHTTP), "--body", strconv.Itoa(o.httpBody)})
	default:
		err = fmt.Errorf("unknown peer %q", c.Peer)
	}
	if err != nil {
		return res, err
	}

	sides := []string{res.sideA(), c.Peer}
	var failed int
	for round := 1; round <= o.rounds; round++ {
		order := sides
		if round%2 == 0 {
			order = []string{sides[1], sides[0]}
		}
		for i, side := range order {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			for _, s := range servers {
				if err := s.Alive(); err != nil {
					return res, err
				}
			}
			tr := Trial{Round: round, Side: side, Order: i + 1, Start: time.Now().UTC()}
			var v float64
			var m map[string]float64
			var err error
			switch {
			case c.Overhead && side == overheadA:
				v, m, err = profiledTrial(ctx, o, tools, env, c, round)
			case c.Overhead, side == "cnibench":
				v, m, err = cnibenchTrial(ctx, o, tools, env, c, "")
			default:
				v, m, err = peerTrial(ctx, o, tools, env, c)
			}
			tr.Metrics = m
			if err != nil {
				failed++
				tr.Error = err.Error()
				logf("  round %d %-8s FAILED: %v", round, side, err)
			} else {
				tr.Value = &v
				logf("  round %d %-8s %s", round, side, fmtValue(v, c.Unit))
			}
			res.Trials = append(res.Trials, tr)
			select {
			case <-ctx.Done():
			case <-time.After(o.pause):
			}
		}
	}
	res.LoadAfter = loadAvg()
	if failed > 0 {
		return res, fmt.Errorf("%d of %d trials failed (see the JSON report)", failed, 2*o.rounds)
	}
	return res, nil
}

func secs(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

func trialTimeout(o options) time.Duration { return o.duration + o.warmup + 60*time.Second }

// addTimeV adds GNU time's figures about the client process to m.
func addTimeV(m map[string]float64, cr *clientRun) error {
	if cr == nil || len(cr.TimeV) == 0 {
		return nil
	}
	tv, err := parse.ParseTimeV(cr.TimeV)
	if err != nil {
		return err
	}
	m["time_client_cpu_sec"] = tv.CPUSec()
	m["time_client_user_sec"] = tv.UserSec
	m["time_client_sys_sec"] = tv.SysSec
	m["time_client_maxrss_bytes"] = float64(tv.MaxRSSBytes)
	m["time_client_vol_cs"] = float64(tv.VoluntaryCS)
	m["time_client_invol_cs"] = float64(tv.InvoluntaryCS)
	m["time_elapsed_sec"] = cr.Elapsed.Seconds()
	return nil
}

// cnibenchArgs is the `cnibench run` command line of one cnibench trial;
// with profilePath it samples every CPU during the window into that file
// (--cpu-profile, at the default frequency).
func cnibenchArgs(o options, cnibench string, env *Env, c *Comparison, profilePath string) []string {
	argv := []string{cnibench, "run",
		"--test", c.Test, "--duration", o.duration.String(), "--warmup", o.warmup.String(),
		"--repeat", "1", "--format", "json", "-q"}
	if c.Test == "http" {
		// The same server as hey's: bench/httpserver, through --url.
		argv = append(argv, "--url", "http://"+net.JoinHostPort(env.ServerIP, strconv.Itoa(portHTTP))+"/",
			"--flows", strconv.Itoa(o.httpClients))
	} else {
		argv = append(argv, "--target", net.JoinHostPort(env.ServerIP, strconv.Itoa(portCnibench)))
	}
	if profilePath != "" {
		argv = append(argv, "--cpu-profile", profilePath)
	}
	return argv
}

// cnibenchMetrics are the figures of cnibench's result kept in a trial.
var cnibenchMetrics = []string{"latency_us_p50", "latency_us_p99", "latency_us_p90", "client_cpu_pct", "server_cpu_pct",
	"client_max_rss_bytes", "errors", "tcp_retransmits", "throughput_bits_per_sec", "cpu_us_per_trans",
	"cpu_pct_per_100gbit", "host_cpu_pct",
	profile.SamplesMetric, profile.LostMetric, "cpu_share_engine", "cpu_share_other_procs", readerCPUMetric}

func cnibenchTrial(ctx context.Context, o options, tools *Tools, env *Env, c *Comparison, profilePath string) (float64, map[string]float64, error) {
	argv := cnibenchArgs(o, tools.Cnibench, env, c, profilePath)
	m := map[string]float64{}
	cr, err := runClient(ctx, env, tools, trialTimeout(o), argv)
	if err != nil {
		return 0, m, err
	}
	if err := addTimeV(m, cr); err != nil {
		return 0, m, err
	}
	r, err := parse.ParseCnibench(cr.Stdout)
	if err != nil {
		return 0, m, err
	}
	for _, k := range cnibenchMetrics {
		if v, ok := r.Metrics[k]; ok {
			m[k] = v
		}
	}
	v, err := r.Metric(c.Metric)
	if err != nil {
		return 0, m, err
	}
	if v == 0 {
		return 0, m, fmt.Errorf("cnibench: %s is 0 (errors: %v)", c.Metric, r.Metrics["errors"])
	}
	if c.Test == "http" {
		// Client CPU per request: the client's own CPU over the measured
		// window ÷ the requests completed in it; and, like the peer's, GNU
		// time's CPU of the whole process ÷ its requests, estimated as the
		// window's rate × (warm-up + duration).
		if pct, ok := r.Metrics["client_cpu_pct"]; ok {
			m["client_cpu_us_per_req"] = pct / 100 / v * 1e6
		}
		if cpu, ok := m["time_client_cpu_sec"]; ok {
			m["time_client_cpu_us_per_req"] = cpu * 1e6 / (v * (o.duration + o.warmup).Seconds())
		}
	}
	return v, m, nil
}

func peerTrial(ctx context.Context, o options, tools *Tools, env *Env, c *Comparison) (float64, map[string]float64, error) {
	m := map[string]float64{}
	var argv []string
	switch c.Peer {
	case "netperf":
		t := map[string]string{"tcp_rr": "TCP_RR", "tcp_crr": "TCP_CRR"}[c.Test]
		argv = []string{tools.Netperf, "-H", env.ServerIP, "-p", strconv.Itoa(portNetserver), "-t", t, "-l", secs(o.duration),
			"--", "-o", "THROUGHPUT,THROUGHPUT_UNITS,P50_LATENCY,P99_LATENCY"}
	case "iperf3":
		argv = []string{tools.Iperf3, "-c", env.ServerIP, "-p", strconv.Itoa(portIperf3), "-P", "1",
			"-t", secs(o.duration), "-O", secs(o.warmup), "-J"}
	case "hey":
		argv = []string{tools.Hey, "-z", o.duration.String(), "-c", strconv.Itoa(o.httpClients), "-disable-keepalive",
			"http://" + net.JoinHostPort(env.ServerIP, strconv.Itoa(portHTTP)) + "/"}
	case "wrk":
		// The same server, connections and duration as hey's; a new
		// connection per request, as cnibench's --url http test does.
		argv = []string{tools.Wrk, "-t", strconv.Itoa(wrkThreads), "-c", strconv.Itoa(o.httpClients), "-d", secs(o.duration),
			"--latency", "-H", "Connection: close",
			"http://" + net.JoinHostPort(env.ServerIP, strconv.Itoa(portHTTP)) + "/"}
	default:
		return 0, m, fmt.Errorf("unknown peer %q", c.Peer)
	}
	cr, err := runClient(ctx, env, tools, trialTimeout(o), argv)
	if err != nil {
		return 0, m, err
	}
	if err := addTimeV(m, cr); err != nil {
		return 0, m, err
	}
	switch c.Peer {
	case "netperf":
		n, err := parse.ParseNetperf(cr.Stdout)
		if err != nil {
			return 0, m, err
		}
		if n.Units != "Trans/s" {
			return 0, m, fmt.Errorf("netperf: throughput units %q, want Trans/s", n.Units)
		}
		// A netperf built without --enable-histogram (e.g. one found on
		// PATH) has no valid percentiles: they stay absent, and the
		// report warns (Report.finish); the throughput still counts.
		for col, k := range map[string]string{parse.NetperfP50: "latency_us_p50", parse.NetperfP99: "latency_us_p99"} {
			if v, err := n.Float(col); err == nil {
				m[k] = v
			}
		}
		return n.Throughput, m, nil
	case "iperf3":
		r, err := parse.ParseIperf3(cr.Stdout)
		if err != nil {
			return 0, m, err
		}
		if r.NumStreams != 1 {
			return 0, m, fmt.Errorf("iperf3 ran %d streams, want 1", r.NumStreams)
		}
		m["tcp_retransmits"] = float64(r.Retransmits)
		m["throughput_bits_per_sec"] = r.SentBitsPerSec
		return r.ReceivedBitsPerSec, m, nil
	case "wrk":
		w, err := parse.ParseWrk(cr.Stdout)
		if err != nil {
			return 0, m, err
		}
		m["errors"] = float64(w.SocketErrors() + w.Non2xx)
		m["wrk_reported_rps"] = w.ReportedRPS
		m["wrk_requests"] = float64(w.Requests)
		m["wrk_run_sec"] = w.RunSec
		for p, k := range map[float64]string{50: "latency_us_p50", 90: "latency_us_p90", 99: "latency_us_p99"} {
			if v, ok := w.Percentiles[p]; ok {
				m[k] = v
			}
		}
		// GNU time's CPU of the whole wrk process ÷ every response it read.
		if cpu, ok := m["time_client_cpu_sec"]; ok && w.Requests > 0 {
			m["time_client_cpu_us_per_req"] = cpu * 1e6 / float64(w.Requests)
			m["client_cpu_us_per_req"] = m["time_client_cpu_us_per_req"]
		}
		return w.OKRPS, m, nil
	default: // hey
		h, err := parse.ParseHey(cr.Stdout)
		if err != nil {
			return 0, m, err
		}
		m["errors"] = float64(h.ErrorCount() + h.Responses(300, 999))
		m["hey_reported_rps"] = h.ReportedRPS
		m["hey_total_sec"] = h.TotalSec
		// GNU time's CPU of the whole hey process ÷ every response it read.
		if cpu, ok := m["time_client_cpu_sec"]; ok {
			if n := h.Responses(100, 999); n > 0 {
				m["time_client_cpu_us_per_req"] = cpu * 1e6 / float64(n)
				m["client_cpu_us_per_req"] = m["time_client_cpu_us_per_req"]
			}
		}
		return h.OKRPS, m, nil
	}
}
