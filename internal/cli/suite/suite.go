// Package suite implements `cnibench suite`: the local lab benchmark.
package suitecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/suite"
)

type flagpole struct {
	Profile       string
	Tests         string
	Paths         string
	Flows         string
	HTTPClients   int
	Repeat        int
	Duration      time.Duration
	Warmup        time.Duration
	MTU           string
	Seed          uint64
	Out           string
	Scenario      string
	CPUProfile    string
	ProfileHz     int
	BusyThreshold float64
	BusyRetries   int
	IdleProbe     time.Duration
	// Scenarios are the registered scenarios' own flags (each scenario
	// package's register.go).
	Scenarios *scenario.Flags
	Lab       labFlags
	Kube      kubeFlags
}

// NewCommand returns the suite command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	cmd, _ := newCommand(logger, s)
	return cmd
}

func newCommand(logger *slog.Logger, s streams.IOStreams) (*cobra.Command, *flagpole) {
	f := &flagpole{}
	cmd := &cobra.Command{
		Use:   "suite",
		Short: "Run the benchmark matrix on the local namespace lab (needs root)",
		Long: "Suite brings the local lab up (nodes and pods as network namespaces, one set per\n" +
			"datapath), runs tcp_stream, tcp_rr and tcp_crr at 1 and 32 flows, udp_stream and http\n" +
			"across every datapath, cross-node and same-node, writes DIR/results.json, prints a\n" +
			"table and tears the lab down. Every repeat runs every cell once, in an order shuffled\n" +
			"per repeat (--seed replays it), each cell from flushed conntrack tables; further MTUs'\n" +
			"labs are interleaved with the main one. A --datapaths subset gets the baseline added\n" +
			"for the graded summary (--no-baseline: not). One suite per host: a second one is\n" +
			"refused. Its processes die with it, whatever kills it; SIGINT, SIGTERM and SIGHUP\n" +
			"keep what was measured and exit 130.\n\n" +
			"Profiles: quick (tcp_stream, tcp_rr and tcp_crr at one flow, 12 repeats of 0.2 s with\n" +
			"clients and servers on one CPU, --pin same; under 3 minutes on 2 cores) and standard\n" +
			"(every test at 1 and 32 flows, 5 repeats of 2 s, plus tcp_rr_loaded and an MTU 9000\n" +
			"sweep, the scheduler placing the processes; under 25 minutes).",
		Args: func(cmd *cobra.Command, args []string) error {
			// --cpu-profile alone means all, so "--cpu-profile test=tcp_rr"
			// leaves test=tcp_rr as an argument: say how to write it.
			if len(args) > 0 && cmd.Flags().Changed("cpu-profile") && f.CPUProfile == "all" && strings.Contains(args[0], "=") {
				return clierr.Usagef("--cpu-profile %s: write --cpu-profile=%s (with =; --cpu-profile alone profiles every cell)", args[0], args[0])
			}
			if len(args) > 0 {
				return clierr.Usagef("suite takes no arguments, got %q (flags start with --)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Profile, "profile", "quick", "quick or standard")
	fl.StringVar(&f.Tests, "tests", "", "comma-separated tests (default: tcp_stream,tcp_rr,tcp_crr,udp_stream,http; standard adds tcp_rr_loaded)")
	fl.StringVar(&f.Paths, "paths", "", "comma-separated pod paths of the matrix: "+strings.Join(suite.KnownPaths, ", ")+" (default: every path the backend offers; the baseline's node-to-node path is always measured)")
	fl.StringVar(&f.Flows, "flows", "", "comma-separated flow counts for the tcp tests (default: 1,32)")
	fl.IntVar(&f.HTTPClients, "http-clients", 0, "concurrent clients of the http test (default 32)")
	fl.IntVar(&f.Repeat, "repeat", 0, "repeats per cell (default: the profile's)")
	fl.DurationVar(&f.Duration, "duration", 0, "measured window per repeat (default: the profile's)")
	fl.DurationVar(&f.Warmup, "warmup", 0, "warm-up before each window (default: the profile's)")
	fl.StringVar(&f.MTU, "mtu", "", "comma-separated wire MTUs; the first runs the whole matrix, others the MTU-sensitive tests (default: the profile's)")
	fl.Uint64Var(&f.Seed, "seed", 0, "seed of the cell order (shuffled per repeat); 0 draws one. The results record it: pass it again to replay an order")
	fl.StringVar(&f.Out, "out", "", "output directory (default: cnibench-results/<time>)")
	fl.StringVar(&f.Scenario, "scenario", "", "run a scenario instead of the matrix: "+strings.Join(scenario.Names(), ", ")+" (see docs/scenarios.md)")
	fl.StringVar(&f.CPUProfile, "cpu-profile", "", "sample every CPU (kernel and user stacks) during the measured windows of the cells given — all, or label=value[,label=value…][;…], e.g. datapath=veth-routing,test=tcp_rr — into DIR/profiles/ (pprof), with each repeat's CPU breakdown by symbol family and flamegraphs in the report; profiled cells are labelled cpu_profile=on (docs/profiles.md)")
	cmd.Flags().Lookup("cpu-profile").NoOptDefVal = "all"
	fl.IntVar(&f.ProfileHz, "cpu-profile-hz", 0, "samples per second per CPU for --cpu-profile (default 999)")
	fl.Float64Var(&f.BusyThreshold, "busy-threshold", suite.DefaultBusyThresholdPct, "mark a repeat busy when other programs (and steal) used more than this percent of one core during its window; busy repeats are re-run and left out of the grades, 0 turns it off (docs/interference.md)")
	fl.IntVar(&f.BusyRetries, "busy-retries", suite.DefaultBusyRetries, "rounds of re-runs, at the end of the run, of the cells left short of clean repeats")
	fl.DurationVar(&f.IdleProbe, "idle-probe", suite.DefaultIdleProbe, "watch the host this long before the first measurement and print how busy it is (0: skip)")
	f.Scenarios = scenario.BindFlags(fl)
	f.Lab.register(cmd)
	f.Kube.register(cmd)
	return cmd, f
}

// splitList splits a comma-separated flag value; an empty element (a,,b,
// a trailing comma, or an empty value) is an error naming the flag.
func splitList(flag, s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			return nil, clierr.Usagef("--%s %q: empty element; separate values with single commas, e.g. --%s a,b", flag, s, flag)
		}
		out = append(out, p)
	}
	return out, nil
}

func ints(flag, s string) ([]int, error) {
	list, err := splitList(flag, s)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range list {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, clierr.Usagef("--%s %s: %q is not a whole number", flag, s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

func (f *flagpole) options(cmd *cobra.Command) (suite.Options, error) {
	o, err := suite.Profile(f.Profile)
	if err != nil {
		return o, clierr.Usagef("--profile %s: must be quick or standard", f.Profile)
	}
	changed := cmd.Flags().Changed
	if changed("tests") {
		if o.Tests, err = splitList("tests", f.Tests); err != nil {
			return o, err
		}
	}
	if changed("paths") {
		if o.Paths, err = splitList("paths", f.Paths); err != nil {
			return o, err
		}
	}
	if changed("flows") {
		if o.Flows, err = ints("flows", f.Flows); err != nil {
			return o, err
		}
	}
	if changed("mtu") {
		if o.MTUs, err = ints("mtu", f.MTU); err != nil {
			return o, err
		}
	}
	if cmd.Flags().Changed("http-clients") {
		o.HTTPClients = f.HTTPClients
	}
	if cmd.Flags().Changed("repeat") {
		o.Repeat = f.Repeat
	}
	if cmd.Flags().Changed("duration") {
		o.Duration = f.Duration
	}
	if cmd.Flags().Changed("warmup") {
		o.Warmup = f.Warmup
	}
	o.Seed = f.Seed
	o.Interference = suite.Interference{ThresholdPct: f.BusyThreshold, Retries: f.BusyRetries, IdleProbe: f.IdleProbe}
	if changed("cpu-profile") {
		if o.CPUProfile, err = suite.ParseCPUProfile(f.CPUProfile, f.ProfileHz); err != nil {
			return o, clierr.Usagef("%v", err)
		}
	} else if changed("cpu-profile-hz") {
		return o, clierr.Usagef("--cpu-profile-hz: give --cpu-profile too (it sets the rate of its sampling)")
	}
	if err := f.scenarioOptions(cmd, &o); err != nil {
		return o, err
	}
	if o.Scenario != "" && f.Profile == "quick" && !changed("repeat") {
		// The quick profile's 12 short repeats narrow the matrix's headline;
		// a scenario's points keep the 5 its docs and timings assume.
		o.Repeat = 5
	}
	k8s, err := f.Kube.kubernetes(cmd)
	if err != nil {
		return o, err
	}
	o.ClusterScale = f.Kube.ClusterScale
	if k8s {
		if err := f.Lab.refuse(cmd, cluster.Name); err != nil {
			return o, err
		}
		if !changed("mtu") {
			// A cluster's MTU is its own: no sweep.
			o.MTUs = o.MTUs[:1]
		}
	}
	o.OutDir = f.Out
	if o.OutDir == "" {
		o.OutDir = filepath.Join("cnibench-results", time.Now().Format("20060102-150405"))
	}
	return o, nil
}

// labOptions are the lab backend's options for the suite's options o:
// without --pin, the quick profile's matrix runs pinned (QuickPin) and
// everything else unpinned.
func (f *flagpole) labOptions(cmd *cobra.Command, o suite.Options) (lab.BackendOptions, error) {
	pin := lab.PinNone
	if f.Profile == "quick" && o.Scenario == "" {
		pin = QuickPin
	}
	return f.Lab.options(cmd, pin)
}

func runE(cmd *cobra.Command, logger *slog.Logger, s streams.IOStreams, f *flagpole) error {
	o, err := f.options(cmd)
	if err != nil {
		return err
	}
	if f.Kube.Backend == cluster.Name {
		ko, err := f.Kube.options()
		if err != nil {
			return err
		}
		ko.Logger = logger
		// Bad flags are reported before the kubeconfig is even read.
		o.Backend = namedBackend(cluster.Name)
		if err := o.Validate(); err != nil {
			return clierr.Usagef("%v", err)
		}
		b, err := f.Kube.newBackend(ko)
		if err != nil {
			return err
		}
		// A cluster that does not answer ends the run here, in one line,
		// before anything is created or written.
		if err := b.Reachable(cmd.Context(), f.Kube.APITimeout); err != nil {
			if errors.Is(err, context.Canceled) {
				return fmt.Errorf("%w: before the cluster answered", clierr.ErrInterrupted)
			}
			return fmt.Errorf("kubernetes: %w", err)
		}
		o.Backend = b
	} else {
		lo, err := f.labOptions(cmd, o)
		if err != nil {
			return err
		}
		lo.Logger = logger
		b, err := lab.NewBackend(lo)
		if err != nil {
			return clierr.Usagef("%v", err)
		}
		o.Backend = b
		if err := o.Validate(); err != nil {
			return clierr.Usagef("%v", err)
		}
		if os.Geteuid() != 0 {
			return errors.New("the lab needs root (network namespaces, netfilter, BPF): run as root, e.g. sudo cnibench suite")
		}
	}
	pw := newProgressWriter(s.ErrOut)
	r := &suite.Runner{Logger: logger, Progress: pw}
	out, err := r.Run(cmd.Context(), o)
	pw.Done()
	var ve *suite.ValidationError
	if errors.As(err, &ve) {
		return clierr.Usagef("%v", err)
	}
	if out == nil {
		return err
	}
	fmt.Fprintln(s.Out)
	if terr := Table(s.Out, out.Set); terr != nil && err == nil {
		err = terr
	}
	paths, rerr := writeReports(out)
	if rerr != nil {
		fmt.Fprintf(s.ErrOut, "cnibench: report: %v\n", rerr)
	}
	fmt.Fprintf(s.Out, "\nresults: %s\n", out.ResultsPath)
	for _, p := range paths {
		fmt.Fprintf(s.Out, "report:  %s\n", p)
	}
	if err != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: the %s; %d measured run(s) kept in %s", clierr.ErrInterrupted, backendNoun(f.Kube.Backend), len(out.Set.Runs), out.ResultsPath)
	}
	return err
}

// scenarioOptions reads --scenario and the scenarios' own flags: the
// scenario named, or selected by one of its flags (--encrypt), and its
// builder; a scenario's flags without it are refused.
func (f *flagpole) scenarioOptions(cmd *cobra.Command, o *suite.Options) error {
	changed := cmd.Flags().Changed
	name, build, err := f.Scenarios.Select(f.Scenario)
	if err != nil {
		return clierr.Usagef("%v", err)
	}
	o.Scenario, o.NewScenario = name, build
	if o.Scenario != "" {
		for _, fl := range []string{"tests", "flows", "http-clients"} {
			if changed(fl) {
				return clierr.Usagef("--%s: a scenario runs its own cells (see docs/scenarios.md); drop --%s or --scenario", fl, fl)
			}
		}
	}
	return nil
}

// writeReports writes report.html and report.md next to results.json.
func writeReports(out *suite.Outcome) ([]string, error) {
	html, md, err := report.WriteFiles(out.Set, filepath.Dir(out.ResultsPath))
	if err != nil {
		return nil, err
	}
	return []string{html, md}, nil
}

// backendNoun names what a backend tears down.
func backendNoun(b string) string {
	if b == cluster.Name {
		return "run's cluster objects were removed"
	}
	return "lab was torn down"
}
