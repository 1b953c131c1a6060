// Command peerbench runs cnibench side by side with standard peers
// (netperf, iperf3, hey, wrk) in one run and reports per-round ratios: the
// harness behind `make bench` (see docs/benchmarks.md).
//
// For every environment (loopback; a veth pair between two namespaces) and
// every comparison (tcp_rr and tcp_crr vs netperf, tcp_stream vs iperf3's
// single stream, 1000-client non-keep-alive http vs hey and vs wrk) it starts both
// servers, then runs rounds of one cnibench trial and one peer trial,
// alternating which goes first (A B, B A, A B, ...). Each round gives one
// ratio cnibench/peer; the report gives a 95 % interval of the ratio
// (Hodges–Lehmann / Wilcoxon signed-rank on the log-ratios) and a verdict
// against the target decided by a rule and a number of rounds fixed in
// advance (plan.go).
//
//	go run ./bench/cmd/peerbench
//
// It must run as root (namespaces). It creates only the namespaces
// cnb-bench-a and cnb-bench-b (198.18.0.0/30 between them, no link to the
// host namespace) and removes them, and every process it started, on exit.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/profile"
)

type options struct {
	rounds      int
	duration    time.Duration
	warmup      time.Duration
	pause       time.Duration
	httpClients int
	httpBody    int
	envs        string
	tests       string
	jsonOut     string
	mdOut       string
	peersDir    string
	buildScript string
	noInstall   bool
	pin         string
	goBin       string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == egressChildCmd {
		// Hidden: one cnibench egress load in its own process (egressload).
		if err := egressChildMain(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "peerbench "+egressChildCmd+":", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.IntVar(&o.rounds, "rounds", planRounds, "rounds per comparison (each round: one cnibench trial and one peer trial, order alternating); at least 6; verdicts are exploratory unless it is the plan's")
	flag.DurationVar(&o.duration, "duration", planDuration, "measured length of each trial (whole seconds; netperf, iperf3, hey and wrk take seconds); verdicts are exploratory unless it is the plan's")
	flag.DurationVar(&o.warmup, "warmup", planWarmup, "cnibench --warmup and iperf3 --omit before each trial's measured window (netperf, hey and wrk have none)")
	flag.DurationVar(&o.pause, "pause", 500*time.Millisecond, "idle time between trials")
	flag.IntVar(&o.httpClients, "http-clients", 1000, "concurrent HTTP clients (cnibench --flows, hey -c, wrk -c)")
	flag.IntVar(&o.httpBody, "http-body", 1024, "HTTP response body bytes")
	flag.StringVar(&o.envs, "envs", "loopback,veth", "environments to run, comma-separated: loopback, veth")
	flag.StringVar(&o.tests, "tests", "tcp_rr,tcp_crr,tcp_stream,http", "comparisons to run, comma-separated; or egress-load alone: cnibench's egress loaders (nftables, ipset, ebpf-lpm) at 1M CIDRs vs nft -f and ipset restore; or profile-overhead alone: tcp_rr and tcp_stream with --cpu-profile against without")
	flag.StringVar(&o.jsonOut, "json", "", "write the full results (every trial) as JSON here (default bench/results/peerbench.json, peerbench-pin-MODE.json with -pin)")
	flag.StringVar(&o.mdOut, "md", "", "also write the Markdown report here (default bench/results/peerbench.md, peerbench-pin-MODE.md with -pin; \"-\" = stdout only)")
	flag.StringVar(&o.peersDir, "peers-dir", "", "directory holding netperf and netserver, built there with the peers' build script if missing (default: netperf/netserver on PATH, else CHECKOUT/peers-bin)")
	flag.StringVar(&o.buildScript, "peers-build", "", "script that builds netperf/netserver into a directory (default: ../shared/peers/build.sh next to the checkout, when present)")
	flag.StringVar(&o.pin, "pin", "none", "CPU placement: none (the scheduler decides), same (servers and clients on CPU 0), split (servers on CPU 1, clients on CPU 0)")
	flag.StringVar(&o.goBin, "go", "go", "the go command that builds cnibench and bench/httpserver (make bench passes its own)")
	flag.BoolVar(&o.noInstall, "no-install", false, "do not apt-get install the programs the selected tests need (iperf3, hey, wrk, nft, ipset, ...) when missing: stop with the install command instead")
	flag.Parse()
	base := defaultBase(o)
	if o.jsonOut == "" {
		o.jsonOut = base + ".json"
	}
	switch o.mdOut {
	case "":
		o.mdOut = base + ".md"
	case "-":
		o.mdOut = ""
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := 0
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		code = 1
	}
	stop()
	os.Exit(code)
}

// defaultBase is the reports' path without extension: -egress and
// -profile-overhead for those selections, -pin-MODE with -pin.
func defaultBase(o options) string {
	base := "bench/results/peerbench"
	switch o.tests {
	case egressTest:
		return base + "-egress"
	case overheadTest:
		base += "-" + overheadTest
	}
	if o.pin != "none" {
		base += "-pin-" + o.pin
	}
	return base
}

func (o options) validate() error {
	if o.rounds < minRounds {
		return fmt.Errorf("-rounds %d: at least %d rounds are needed for a 95%% interval (the plan uses %d)", o.rounds, minRounds, planRounds)
	}
	if o.duration < time.Second || o.duration%time.Second != 0 {
		return fmt.Errorf("-duration %v: must be whole seconds, at least 1s", o.duration)
	}
	if o.warmup < 0 || o.warmup%time.Second != 0 {
		return fmt.Errorf("-warmup %v: must be whole seconds (iperf3 --omit)", o.warmup)
	}
	if o.httpClients < 1 {
		return fmt.Errorf("-http-clients %d: must be at least 1", o.httpClients)
	}
	switch o.pin {
	case "none", "same", "split":
	default:
		return fmt.Errorf("-pin %q: must be none, same or split", o.pin)
	}
	if o.pin != "none" && runtime.NumCPU() < 2 {
		return fmt.Errorf("-pin %s needs at least 2 CPUs", o.pin)
	}
	for _, e := range splitList(o.envs) {
		if e != "loopback" && e != "veth" {
			return fmt.Errorf("-envs: unknown environment %q", e)
		}
	}
	for _, t := range splitList(o.tests) {
		if (t == egressTest || t == overheadTest) && o.tests != t {
			return fmt.Errorf("-tests %s: %s runs alone (give -tests %s)", o.tests, t, t)
		}
		if t != egressTest && comparisonByTest(t) == nil {
			return fmt.Errorf("-tests: unknown comparison %q", t)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[peerbench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

func run(ctx context.Context, o options, stdout io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("must run as root (it creates network namespaces)")
	}
	if runtime.GOOS != "linux" {
		return errors.New("linux only")
	}
	root, err := moduleRoot(ctx, o.goBin)
	if err != nil {
		return err
	}
	// Every external program the selection runs is there before the first
	// round, installed if it can be, or the run stops here in one line.
	host := prereqHost{lookPath: exec.LookPath, root: os.Geteuid() == 0, install: aptInstall}
	if err := ensurePrograms(ctx, o.tests, programsNeeded(splitList(o.tests), o.pin), o.noInstall, host); err != nil {
		return err
	}
	if o.tests == egressTest {
		return runEgressLoad(ctx, o, root, stdout)
	}
	if o.tests == overheadTest {
		// Every profiled trial would fail alike: say why once, now.
		if err := profile.Probe(); err != nil {
			return fmt.Errorf("-tests %s needs CPU profiling (cnibench run --cpu-profile): %w", overheadTest, err)
		}
	}
	tmp, err := os.MkdirTemp("", "cnb-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	tools, err := prepareTools(ctx, o, root, tmp)
	if err != nil {
		return err
	}
	if d := o.deviations(); len(d) > 0 {
		logf("this run does not follow the plan (%s): its verdicts are exploratory", strings.Join(d, ", "))
	}
	nComp := 0
	for _, t := range splitList(o.tests) {
		nComp += len(comparisonsByTest(t))
	}
	nComp *= len(splitList(o.envs))
	logf("%d comparisons × %d rounds of %v: about %v", nComp, o.rounds, o.duration, estimatedRunTime(o, nComp).Round(time.Second))
	rep := &Report{
		Schema: "cnibench/peerbench/v2",
		Start:  time.Now().UTC(),
		Host:   hostInfo(),
		Tools:  tools.versions(ctx),
		Config: map[string]string{
			"rounds":        fmt.Sprint(o.rounds),
			"duration":      o.duration.String(),
			"warmup":        o.warmup.String(),
			"pause":         o.pause.String(),
			"http_clients":  fmt.Sprint(o.httpClients),
			"http_body":     fmt.Sprint(o.httpBody),
			"pin":           o.pin,
			"tests":         o.tests,
			"plan_followed": fmt.Sprint(len(o.deviations()) == 0),
		},
		Plan: planHeader(o),
	}
	var runErrs []error
	for _, envName := range splitList(o.envs) {
		if ctx.Err() != nil {
			break
		}
		env, cleanup, err := setupEnv(ctx, envName)
		if err != nil {
			runErrs = append(runErrs, fmt.Errorf("%s: %w", envName, err))
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", envName, err))
			continue
		}
		switch o.pin {
		case "same":
			env.ServerCPU, env.ClientCPU = "0", "0"
		case "split":
			env.ServerCPU, env.ClientCPU = "1", "0"
		}
		for _, t := range splitList(o.tests) {
			if ctx.Err() != nil {
				break
			}
			for _, c := range comparisonsByTest(t) {
				if ctx.Err() != nil {
					break
				}
				res, err := runComparison(ctx, o, tools, env, c)
				if res != nil {
					rep.Comparisons = append(rep.Comparisons, res)
				}
				if err != nil {
					runErrs = append(runErrs, fmt.Errorf("%s/%s: %w", envName, c.Name(), err))
					rep.Errors = append(rep.Errors, fmt.Sprintf("%s/%s: %v", envName, c.Name(), err))
				}
			}
		}
		if err := cleanup(); err != nil {
			runErrs = append(runErrs, fmt.Errorf("%s cleanup: %w", envName, err))
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s cleanup: %v", envName, err))
		}
	}
	rep.End = time.Now().UTC()
	rep.Interrupted = ctx.Err() != nil
	rep.finish(o)
	var md strings.Builder
	rep.writeMarkdown(&md)
	if _, err := io.WriteString(stdout, md.String()); err != nil {
		runErrs = append(runErrs, err)
	}
	if o.mdOut != "" {
		path := o.mdOut
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			runErrs = append(runErrs, err)
		} else if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
			runErrs = append(runErrs, err)
		}
	}
	{
		path := o.jsonOut
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := writeJSON(path, rep); err != nil {
			runErrs = append(runErrs, err)
		} else {
			logf("wrote %s", path)
		}
	}
	if rep.Interrupted {
		runErrs = append(runErrs, errors.New("interrupted"))
	}
	return errors.Join(runErrs...)
}

func moduleRoot(ctx context.Context, goBin string) (string, error) {
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("%s env GOMOD: %w (pass -go /path/to/go)", goBin, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the cnibench module (run from the repository)")
	}
	return filepath.Dir(gomod), nil
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
