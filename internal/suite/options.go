// Package suite runs cnibench's main job: it brings the local lab up, runs
// the benchmark matrix (datapath × path × test × flows × MTU) with repeats
// interleaved across datapaths, writes a cnibench/results/v1 document after
// every measurement, and tears the lab down whatever happens.
package suite

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
)

// Options configure a suite run.
type Options struct {
	Profile string
	Tests   []string
	// Flows are the flow counts of the tcp tests (the seeds use 1 and 32).
	Flows []int
	// HTTPClients is the concurrency of the http test.
	HTTPClients int
	Repeat      int
	Duration    time.Duration
	Warmup      time.Duration
	// MTUs: the first is the main matrix; every further one re-runs the
	// MTU-sensitive subset (tcp_stream, tcp_rr at 1 flow) on a fresh lab.
	MTUs []int
	// Seed orders the cells of every repeat (schedule) and is the
	// scenario's seed (scenario.Common); 0 draws a random one. The seed
	// used is recorded in the results' config.
	Seed   uint64
	OutDir string
	// Scenario, when not empty, runs that scenario instead of the matrix:
	// a name registered with scenario.Register by a scenario package
	// linked into the binary (internal/cli/suite/scenarios.go).
	Scenario string
	// Paths, when not empty, are the pod paths of the matrix measured
	// (KnownPaths; an IP family's -ipv6 twin goes with its path); the
	// baseline's node-to-node path is always measured, the graded
	// summary's reference. Empty: every path the backend offers.
	Paths []string
	// NewScenario builds it from its own flags, parsed by the CLI
	// (scenario.BindFlags) or by Registration.Parse; nil: the scenario's
	// defaults.
	NewScenario scenario.Builder
	// ClusterScale lets a scenario create thousands of objects on a
	// cluster (--cluster-scale).
	ClusterScale bool
	// CPUProfile, when set, profiles the CPUs during the measured windows
	// of the cells it selects (profile.go); nil: none.
	CPUProfile *CPUProfile
	// Interference is the rule for repeats measured while other programs
	// competed for the host (interference.go); the zero value is off.
	Interference Interference
	// Backend is where the suite runs (the lab, internal/lab; a cluster,
	// internal/cluster); required. Its own options (the lab's datapaths,
	// wire, CPU placement) are its own.
	Backend backend.Backend
}

// validateBackend checks what the backend cannot honour.
func (o Options) validateBackend() error {
	if o.Backend == nil {
		return fmt.Errorf("no backend: the CLI picks one with --backend")
	}
	if m, ok := o.Backend.(backend.MTUSetter); (!ok || !m.SetsMTU()) && len(o.MTUs) > 1 {
		return fmt.Errorf("--mtu: the %s backend measures the cluster's MTU as it is; give at most one --mtu (it is not applied)", o.Backend.Name())
	}
	return nil
}

// The quick profile's repeats and windows (see Profile).
const (
	QuickRepeat   = 12
	QuickDuration = 200 * time.Millisecond
	QuickWarmup   = 100 * time.Millisecond
)

// Profile returns the defaults of a named profile.
func Profile(name string) (Options, error) {
	o := Options{
		Profile:     name,
		Tests:       []string{engine.TCPStream, engine.TCPRR, engine.TCPCRR, engine.UDPStream, engine.HTTP},
		Flows:       []int{1, 32},
		HTTPClients: 32,
	}
	switch name {
	case "quick":
		// The summary's headline in under 3 minutes on 2 cores: every
		// datapath against the baseline on tcp_stream, tcp_rr and tcp_crr
		// at one flow, one MTU. Its repeats, not its windows, decide the
		// grades' intervals: a repeat's spread comes from the machine
		// (scheduling, other load) and is about as wide with 2 s windows
		// as with 200 ms ones, while the median's order-statistic 95 %
		// interval narrows in steps, at 9, 12 and 16 repeats (5 to 8 give
		// the range). So: many short repeats. What this leaves out (udp_stream,
		// http, tcp_rr_loaded, 32 flows, MTU 9000) the report lists with
		// the command that measures it; docs/reports.md, "The quick
		// profile", has the numbers behind the shape.
		o.Tests, o.Flows = []string{engine.TCPStream, engine.TCPRR, engine.TCPCRR}, []int{1}
		o.Repeat, o.Duration, o.Warmup, o.MTUs = QuickRepeat, QuickDuration, QuickWarmup, []int{1500}
	case "standard":
		// 2 s windows (1.5 s before): 114 cells (80 + 16 tcp_rr_loaded +
		// 18 at MTU 9000) × 5 repeats × ~2.35 s per client run ≈ 22.3 min
		// on 2 cores. tcp_rr_loaded answers the loaded-latency question
		// (tcp_rr's percentiles while tcp_stream flows fill the path).
		o.Tests = append(o.Tests, engine.TCPRRLoaded)
		o.Repeat, o.Duration, o.Warmup, o.MTUs = 5, 2*time.Second, 250*time.Millisecond, []int{1500, 9000}
	default:
		return o, fmt.Errorf("unknown profile %q: use quick or standard", name)
	}
	return o, nil
}

// cell is one point of the matrix.
type cell struct {
	Datapath string
	Path     string
	Test     string
	Flows    int
	MTU      int
	// timeWait is the number of TIME_WAIT sockets when the cell starts, -1
	// if unknown (not a label).
	timeWait int
	// extra are the backend's labels of the cell (cluster, CNI, nodes, …);
	// they override the cell's own (a cluster's real MTU).
	extra map[string]string
	// sc is a scenario's part of the cell (its labels, the client's
	// --rate, what it adds to each repeat); nil outside scenarios.
	sc *scenarioCell
	// dep is the deployment the cell runs on.
	dep *depRun
	// profiled: the cell's windows are CPU-profiled (label cpu_profile=on:
	// a profiled cell is never compared with an unprofiled one).
	profiled bool
}

func (c cell) labels() map[string]string {
	l := map[string]string{
		"datapath": c.Datapath,
		"path":     c.Path,
		"test":     c.Test,
		"flows":    strconv.Itoa(c.Flows),
		"mtu":      strconv.Itoa(c.MTU),
	}
	if c.sc != nil {
		for k, v := range c.sc.labels {
			l[k] = v
		}
	}
	for k, v := range c.extra {
		l[k] = v
	}
	if c.profiled {
		l[ProfiledLabel] = "on"
	}
	return l
}

// testVariants expands the tests into (test, flows) pairs.
func (o Options) testVariants(mainMTU bool) [][2]string {
	var out [][2]string
	for _, t := range o.Tests {
		if !mainMTU && t != engine.TCPStream && t != engine.TCPRR {
			continue
		}
		switch t {
		case engine.TCPStream, engine.TCPRR, engine.TCPCRR:
			for _, f := range o.Flows {
				if !mainMTU && f != 1 {
					continue
				}
				out = append(out, [2]string{t, strconv.Itoa(f)})
			}
		case engine.HTTP:
			out = append(out, [2]string{t, strconv.Itoa(o.HTTPClients)})
		default:
			out = append(out, [2]string{t, "1"})
		}
	}
	return out
}

// ValidationError is a bad option (the CLI maps it to a usage error).
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return e.Msg }

// Validate checks the options; errors name the flag.
func (o Options) Validate() error {
	if err := o.validate(); err != nil {
		return &ValidationError{err.Error()}
	}
	return nil
}

// KnownPaths are the paths --paths may name: the lab's pod paths and the
// Kubernetes backend's (docs/kubernetes.md, "Paths").
var KnownPaths = []string{"same-node", "cross-node", "pod-to-endpoint", "pod-to-service", "pod-to-nodeport", "hairpin", "cross-node-pairs", "pod-to-loadbalancer", "external-to-loadbalancer"}

// keepPath reports whether a path of this kind is measured under o.Paths.
func (o Options) keepPath(kind string) bool {
	if len(o.Paths) == 0 || kind == "node-to-node" {
		return true
	}
	return slices.ContainsFunc(o.Paths, func(p string) bool { return kind == p || kind == p+"-ipv6" || kind == p+"-ipv4" })
}

func (o Options) validate() error {
	if err := o.validateBackend(); err != nil {
		return err
	}
	for _, t := range o.Tests {
		if !engine.ValidTest(t) {
			return fmt.Errorf("--tests: unknown test %q (known: %s)", t, strings.Join(engine.Tests, ", "))
		}
	}
	if len(o.Tests) == 0 {
		return fmt.Errorf("--tests: no test given")
	}
	for _, p := range o.Paths {
		if !slices.Contains(KnownPaths, p) {
			return fmt.Errorf("--paths: unknown path %q (known: %s; node-to-node, the baseline, is always measured)", p, strings.Join(KnownPaths, ", "))
		}
	}
	if len(o.Paths) > 0 && o.Scenario != "" {
		return fmt.Errorf("--paths: the matrix's paths; --scenario %s measures its own", o.Scenario)
	}
	for _, f := range o.Flows {
		if f < 1 || f > engine.MaxFlows {
			return fmt.Errorf("--flows %d: must be between 1 and %d", f, engine.MaxFlows)
		}
	}
	if len(o.Flows) == 0 {
		return fmt.Errorf("--flows: no flow count given")
	}
	if o.HTTPClients < 1 || o.HTTPClients > engine.MaxHTTPFlows {
		return fmt.Errorf("--http-clients %d: must be between 1 and %d", o.HTTPClients, engine.MaxHTTPFlows)
	}
	if o.Repeat < 1 || o.Repeat > 100 {
		return fmt.Errorf("--repeat %d: must be between 1 and 100", o.Repeat)
	}
	if o.Duration < 100*time.Millisecond {
		return fmt.Errorf("--duration %s: must be at least 100ms", o.Duration)
	}
	if o.Warmup < 0 {
		return fmt.Errorf("--warmup %s: must not be negative", o.Warmup)
	}
	if len(o.MTUs) == 0 {
		return fmt.Errorf("--mtu: no MTU given")
	}
	for _, m := range o.MTUs {
		if m < 1280 || m > 65535 {
			return fmt.Errorf("--mtu %d: must be between 1280 and 65535", m)
		}
	}
	if o.OutDir == "" {
		return fmt.Errorf("--out: an output directory is required")
	}
	if err := o.Interference.validate(); err != nil {
		return err
	}
	return o.validateScenario()
}
