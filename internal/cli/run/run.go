// Package run implements `cnibench run`: one test against a cnibench server.
package runcmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
)

type flagpole struct {
	Target, Test           string
	Duration, Warmup       time.Duration
	Timeout                time.Duration
	Repeat, Flows          int
	ReqSize, RespSize, Msg string
	HTTPBody, HTTPPath     string
	URL, Service           string
	KeepAlive, BusyPoll    bool
	UDPHandshake           bool
	Rate                   string
	Format, Output         string
	Quiet                  bool
	Token                  string
	StopOnStdinEOF         bool
	CPUProfile             string
	CPUProfileHz           int
	LoadFlows              int
}

// StopOnStdinEOFFlag is the hidden flag with which a remote launcher (the
// Kubernetes backend, by exec) can interrupt a run: at the end of its
// standard input the run stops as on Ctrl-C and reports what it measured.
const StopOnStdinEOFFlag = "stop-on-stdin-eof"

// NewCommand returns the run command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &flagpole{}
	cmd := &cobra.Command{
		Use:   "run --target HOST[:PORT] --test TEST",
		Short: "Run one test against a cnibench server",
		Long: "Run measures one test against `cnibench serve` and prints the result.\n\n" +
			"Tests: " + strings.Join(engine.Tests, ", ") + ".\n" +
			"  tcp_stream  bulk TCP throughput (sender and receiver side, retransmits)\n" +
			"  tcp_rr      request/response on one persistent connection per flow\n" +
			"  tcp_crr     a new connection per transaction (also connect-time percentiles)\n" +
			"  udp_stream  datagrams sized to the path MTU (no fragmentation); received goodput, sent rate, exact loss %\n" +
			"  udp_rr      request/response over UDP\n" +
			"  icmp_echo   ICMP echo request/reply from an ICMP datagram socket, as ping -f (the target's kernel answers)\n" +
			"  http        HTTP/1.1 GET; --flows concurrent clients, keep-alive off by default\n" +
			"  tcp_rr_loaded  tcp_rr while --load-flows tcp_stream flows load the same path (latency under load)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Target, "target", "", "address of the cnibench server, HOST[:PORT] (default port 12870)")
	fl.StringVar(&f.Test, "test", engine.TCPRR, "test to run: "+strings.Join(engine.Tests, ", "))
	fl.DurationVar(&f.Duration, "duration", 10*time.Second, "length of each measured window")
	fl.DurationVar(&f.Warmup, "warmup", time.Second, "traffic before each window opens (not measured)")
	fl.IntVar(&f.Repeat, "repeat", engine.DefaultRepeat, "number of measured windows (5 or more each side for compare to reach a verdict)")
	fl.IntVar(&f.Flows, "flows", 0, "parallel connections, 1..256 (http: concurrent clients, default 32)")
	fl.StringVar(&f.ReqSize, "request-size", "", "request bytes (rr tests; default 1) or ICMP echo payload bytes (icmp_echo; default 56, as ping)")
	fl.StringVar(&f.RespSize, "response-size", "", "response bytes (rr tests; default 1)")
	fl.StringVar(&f.Msg, "message-size", "", "write size for tcp_stream (default 128K) or datagram size for udp_stream (default: the path MTU less the IP and UDP headers; larger fragments, with a warning)")
	fl.StringVar(&f.HTTPBody, "http-body", "1024", "HTTP response body bytes")
	fl.StringVar(&f.HTTPPath, "http-path", "", "HTTP request path (default /, or the path of --url)")
	fl.StringVar(&f.Service, "service", "", "tcp_rr/tcp_crr/tcp_stream against `HOST:PORT` where cnibench serve --service-listen servers answer without a session, e.g. a load-balanced service's VIP, or several HOST:PORT separated by commas, which connections take in turn (instead of --target; needs the token; server CPU is then not measured)")
	fl.StringVar(&f.URL, "url", "", "http test against an external HTTP server, e.g. http://198.18.0.10:8080/, or several URLs with the same path separated by commas, which connections take in turn (instead of --target; server CPU is then not measured)")
	fl.BoolVar(&f.KeepAlive, "http-keepalive", false, "reuse HTTP connections (default: a new connection per request, as 'hey -disable-keepalive')")
	fl.StringVar(&f.Rate, "rate", "0", "fixed offered load: bit/s for stream tests (e.g. 1G), trans/s otherwise (e.g. 20k), latency then timed from each scheduled send (open loop, as wrk2); 0 = as fast as possible (closed loop: one transaction in flight per flow)")
	fl.BoolVar(&f.UDPHandshake, "udp-handshake", false, "udp_stream: one datagram each way before the stream, as iperf3's UDP mode (a stateful firewall then holds the flow established)")
	fl.BoolVar(&f.BusyPoll, "busy-poll", false, "spin on non-blocking sockets instead of blocking in the kernel (recorded in the result)")
	fl.DurationVar(&f.Timeout, "timeout", 5*time.Second, "bound on one blocking socket operation")
	fl.StringVar(&f.Format, "format", "text", "output format: text or json (a cnibench/result/v1 document)")
	fl.StringVarP(&f.Output, "output", "o", "", "also write the JSON result to this file")
	fl.BoolVarP(&f.Quiet, "quiet", "q", false, "no progress on stderr")
	fl.StringVar(&f.Token, "token", "", "shared secret the server requires (default $"+engine.TokenEnv+"; the variable keeps it out of the process list)")
	fl.BoolVar(&f.StopOnStdinEOF, StopOnStdinEOFFlag, false, "stop as on Ctrl-C, keeping what was measured, when standard input ends (for a launcher that runs it remotely)")
	_ = fl.MarkHidden(StopOnStdinEOFFlag)
	fl.IntVar(&f.LoadFlows, "load-flows", 0, "tcp_rr_loaded: tcp_stream flows loading the path while the rr flows are measured (default 4)")
	fl.StringVar(&f.CPUProfile, "cpu-profile", "", "sample every CPU (kernel and user stacks) during the measured windows and write them, merged, to this gzipped pprof file; each repeat gets its CPU breakdown by symbol family (cpu_share_*; needs root or perf_event_paranoid ≤ -1; docs/profiles.md)")
	fl.IntVar(&f.CPUProfileHz, "cpu-profile-hz", profile.DefaultHz, "samples per second per CPU for --cpu-profile")
	return cmd
}

func (f *flagpole) config(cmd *cobra.Command) (engine.Config, error) {
	cfg := engine.Config{
		Target: f.Target, Test: f.Test, Duration: f.Duration, Warmup: f.Warmup,
		Repeat: f.Repeat, Flows: f.Flows, HTTPKeepAlive: f.KeepAlive, HTTPPath: f.HTTPPath,
		BusyPoll: f.BusyPoll, Timeout: f.Timeout, URL: f.URL, Service: f.Service,
		LoadFlows: f.LoadFlows, UDPHandshake: f.UDPHandshake,
	}
	if cmd.Flags().Changed("warmup") && f.Warmup == 0 {
		cfg.Warmup = -1 // explicit zero: no warm-up
	}
	sizes := []struct {
		name string
		val  string
		dst  *int
	}{
		{"request-size", f.ReqSize, &cfg.ReqSize},
		{"response-size", f.RespSize, &cfg.RespSize},
		{"message-size", f.Msg, &cfg.MsgSize},
		{"http-body", f.HTTPBody, &cfg.HTTPBody},
	}
	for _, sz := range sizes {
		if sz.val == "" {
			continue
		}
		v, err := engine.ParseSize(sz.val)
		if err != nil {
			return cfg, clierr.Usagef("--%s: %v", sz.name, err)
		}
		*sz.dst = v
	}
	if f.HTTPBody == "0" {
		cfg.HTTPBody = 0
	}
	rate, err := engine.ParseRate(f.Rate)
	if err != nil {
		return cfg, clierr.Usagef("--rate: %v", err)
	}
	cfg.Rate = rate
	if f.Format != "text" && f.Format != "json" {
		return cfg, clierr.Usagef("--format %s: must be text or json", f.Format)
	}
	if cmd.Flags().Changed("flows") && f.Flows == 0 {
		return cfg, clierr.Usagef("--flows 0: must be at least 1")
	}
	if cmd.Flags().Changed("repeat") && f.Repeat == 0 {
		return cfg, clierr.Usagef("--repeat 0: must be at least 1")
	}
	cfg = engine.Defaults(cfg)
	if f.Test == engine.HTTP && f.HTTPBody == "0" {
		cfg.HTTPBody = 0
	}
	if err := cfg.Validate(); err != nil {
		return cfg, clierr.Usagef("%v", err)
	}
	return cfg, nil
}

func runE(cmd *cobra.Command, logger *slog.Logger, s streams.IOStreams, f *flagpole) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	token := f.Token
	if token == "" {
		token = os.Getenv(engine.TokenEnv)
	}
	cl := &client.Client{Logger: logger, Token: token}
	var hook *profileHook
	if f.CPUProfile != "" {
		if f.CPUProfileHz < 1 || f.CPUProfileHz > 10000 {
			return clierr.Usagef("--cpu-profile-hz %d: give 1..10000 samples per second per CPU", f.CPUProfileHz)
		}
		if err := profile.Probe(); err != nil {
			return clierr.Usagef("--cpu-profile: %v", err)
		}
		hook = &profileHook{opts: profile.Options{Frequency: f.CPUProfileHz}}
		cl.Window = hook
		defer func() { _, _ = hook.stop() }() // a window left open by an error
	}
	if !f.Quiet {
		cl.Progress = func(e client.Event) { printProgress(s.ErrOut, cfg, e) }
	}
	ctx := cmd.Context()
	if f.StopOnStdinEOF {
		if s.In == nil {
			return clierr.Usagef("--%s: no standard input to watch (drop the flag)", StopOnStdinEOFFlag)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			// Whatever comes is ignored; its end (or a read error)
			// stops the run.
			_, _ = io.Copy(io.Discard, s.In)
			if logger != nil {
				logger.Debug("standard input ended: stopping the run")
			}
			cancel()
		}()
	}
	res, runErr := cl.Run(ctx, cfg)
	if hook != nil && res != nil {
		if err := hook.finish(f.CPUProfile, res); err != nil {
			addWarning(res, "cpu profile: "+err.Error())
		}
	}
	if res == nil {
		return runErr
	}
	if f.Output != "" {
		if err := writeFile(f.Output, res); err != nil {
			return fmt.Errorf("write --output %s: %w", f.Output, err)
		}
	}
	switch f.Format {
	case "json":
		if err := result.Write(s.Out, res); err != nil {
			return err
		}
	default:
		if err := PrintText(s.Out, res); err != nil {
			return err
		}
	}
	if runErr != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: kept the %d repeat(s) measured so far", clierr.ErrInterrupted, len(res.Repeats))
	}
	return runErr
}

func writeFile(path string, res *result.Result) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := result.Write(fh, res); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func printProgress(w io.Writer, cfg engine.Config, e client.Event) {
	switch e.Phase {
	case "warmup":
		fmt.Fprintf(w, "repeat %d/%d: %s, %d flow(s), warm-up %s then %s measured\n", e.Repeat, e.Repeats, cfg.Test, cfg.Flows, cfg.Warmup, cfg.Duration)
	case "done":
		key := PrimaryMetric(cfg.Test)
		fmt.Fprintf(w, "repeat %d/%d: %s\n", e.Repeat, e.Repeats, result.Format(key, e.Metrics[key]))
	}
}

// PrimaryMetric is the headline metric of a test.
func PrimaryMetric(test string) string {
	if engine.IsStream(test) {
		return result.ThroughputBitsPerSec
	}
	return result.TransPerSec
}

// metricOrder lists metrics in the order the text table shows them.
var metricOrder = []string{
	result.ThroughputBitsPerSec, result.ThroughputRxBitsPerSec, result.ThroughputTxBitsPerSec, result.TransPerSec,
	result.LatencyUsMean, result.LatencyUsP50, result.LatencyUsP90, result.LatencyUsP99, result.LatencyUsP999, result.LatencyUsMax,
	result.ConnectUsP50, result.ConnectUsP90, result.ConnectUsP99, result.ConnectUsMax,
	result.LossPct, result.DatagramsSent, result.DatagramsReceived, result.DatagramsLost, result.DatagramsDuplicated,
	result.DatagramsReordered, result.TCPRetransmits, result.TCPRetransmitPct, result.TCPSRTTUsMedian, result.TCPSRTTUsMax,
	result.TCPRTTVarUsMedian, result.TCPMinRTTUs, result.TCPSndCwndSegmentsMedian, result.TCPDeliveryRateBitsPerSec,
	result.LoadThroughputBitsPerSec, result.LoadTCPRetransmits, result.LoadTCPSRTTUsMedian, result.Errors,
	result.CPUPctPer100Gbit, result.CPUUsPerTrans, result.HostCPUPct, result.HostCPUUserPct, result.HostCPUSysPct,
	result.HostCPUSoftirqPct, result.HostCPUIrqPct, result.RemoteHostCPUPct, result.RemoteHostCPUSysPct,
	result.RemoteHostCPUSoftirqPct, result.ClientCPUPct, result.ServerCPUPct, result.ClientRSSBytes,
}

// PrintText writes a readable table of res.
func PrintText(w io.Writer, res *result.Result) error {
	c := res.Config
	to := c["target"]
	if to == "" {
		to = c["url"]
	}
	if to == "" {
		to = "service " + c["service"]
	}
	fmt.Fprintf(w, "%s to %s, %s flow(s), %d × %s (warm-up %s), path MTU %s\n",
		c["test"], to, c["flows"], len(res.Repeats), c["duration"], c["warmup"], orDash(c["path_mtu"]))
	fmt.Fprintf(w, "host %s: %s, %d cores, kernel %s\n\n", res.Host.Hostname, res.Host.CPUModel, res.Host.Cores, res.Host.Kernel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tmedian\tmin\tmax\t95% CI\tCoV\tn\t")
	seen := map[string]bool{}
	names := append([]string(nil), metricOrder...)
	var extra []string
	for k := range res.Summary {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	names = append(names, extra...)
	for _, k := range names {
		sm, ok := res.Summary[k]
		if !ok || seen[k] || sm.N == 0 {
			continue
		}
		seen[k] = true
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s … %s\t%.1f%%\t%d\t\n", k,
			result.Format(k, sm.Median), result.Format(k, sm.Min), result.Format(k, sm.Max),
			result.Format(k, sm.CI95Low), result.Format(k, sm.CI95High), 100*sm.CoV, sm.N)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var warns []string
	warns = append(warns, res.Warnings...)
	if sm, ok := res.Summary[PrimaryMetric(c["test"])]; ok {
		warns = append(warns, sm.Warnings...)
	}
	for _, r := range res.Repeats {
		if r.Error != "" {
			warns = append(warns, fmt.Sprintf("repeat %d failed: %s", r.Index+1, r.Error))
		}
	}
	if len(warns) > 0 {
		fmt.Fprintln(w)
		for _, x := range warns {
			fmt.Fprintf(w, "warning: %s\n", x)
		}
	}
	if res.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures above cover the repeats measured before the interruption")
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
