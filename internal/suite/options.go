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
	"github.com/cnibench/cnibench/internal/lab"
)

// NoTrack is the datapath variant the conntrack scenario compares with
// veth-routing (seed 000: many-flow TCP_CRR collapses on conntrack; NOTRACK
// fixes it).
const NoTrack = "veth-routing-notrack"

// variantSuffixes mark datapaths that change one thing of another (their
// base): conntrack bypassed (-notrack), or the eBPF program without its
// conntrack and policy maps (-bare).
var variantSuffixes = []string{"-notrack", "-bare"}

// variantBase returns the datapath that name is a variant of, "" if name is
// not a variant of a known datapath.
func variantBase(name string, known []string) string {
	for _, suf := range variantSuffixes {
		if base, ok := strings.CutSuffix(name, suf); ok && slices.Contains(known, base) {
			return base
		}
	}
	return ""
}

// defaultDatapaths is the matrix without --datapaths: every known datapath
// except the variants, which join through the conntrack scenario.
func defaultDatapaths(known []string) []string {
	var out []string
	for _, d := range known {
		if variantBase(d, known) == "" {
			out = append(out, d)
		}
	}
	return out
}

// scenarioVariants returns the variants of the selected datapaths that are
// not selected themselves: the conntrack scenario runs them on the tcp_crr
// cross-node cells only, next to their base.
func scenarioVariants(selected, known []string) []string {
	var out []string
	for _, d := range known {
		if b := variantBase(d, known); b != "" && slices.Contains(selected, b) && !slices.Contains(selected, d) {
			out = append(out, d)
		}
	}
	return out
}

// Options configure a suite run.
type Options struct {
	Profile   string
	Datapaths []string // empty: every registered datapath except the variants (-notrack, -bare)
	Tests     []string
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
	// Conntrack adds the variants of the selected datapaths (NoTrack,
	// bridge-notrack, …, ebpf-host-routing-bare) to the tcp_crr cross-node
	// cells (the conntrack scenario).
	Conntrack bool
	// NoBaseline keeps a --datapaths subset without the baseline datapath,
	// which is otherwise added for the graded summary.
	NoBaseline bool
	// Seed orders the cells of every repeat (schedule); 0 draws a random
	// one. The seed used is recorded in the results' config.
	Seed uint64
	// Pin places the suite's servers and clients on CPUs: PinNone (the
	// scheduler decides), PinSame (both on one CPU) or PinSplit (servers on
	// one CPU, clients on another), as `make bench -pin` does; empty
	// means PinNone.
	Pin string
	// Wire is the lab's wire mode (lab.Wires), recorded in the results;
	// empty means lab.DefaultWire.
	Wire   string
	OutDir string
	// Scenario, when not empty, runs that scenario instead of the matrix
	// (ScenarioEgress; see scenario_linux.go), with its options below.
	Scenario string
	// Mechanisms, Rules and FilterTraversals are the egress-filter
	// scenario's --mechanisms, --rules and --filter-traversal (empty: its
	// defaults); FilterSeed generates its deny sets (0: Seed).
	Mechanisms       []string
	Rules            []int
	FilterTraversals []string
	FilterSeed       uint64
	// Implementations and Services are the services scenario's
	// --implementations and --services (empty: its defaults).
	Implementations []string
	Services        []int
	// LBModes are the l4lb scenario's --lb-modes (empty: every mode).
	LBModes []string
	// Encrypt are the encryption scenario's families (--encrypt
	// wireguard,ipsec; empty: both).
	Encrypt []string
	// Binary is the cnibench executable run inside the namespaces.
	Binary string
	// Backend is where the matrix runs; nil means the local lab. Another
	// backend (a Kubernetes cluster) has its own datapaths and MTU: the
	// lab's options (Datapaths, several MTUs, Conntrack variants, Wire,
	// Pin, Scenario) do not apply to it.
	Backend backend.Backend
}

// validateBackend checks the options a non-lab backend cannot honour.
func (o Options) validateBackend() error {
	if o.Backend == nil {
		return nil
	}
	name := o.Backend.Name()
	switch {
	case o.Scenario != "":
		return fmt.Errorf("--scenario %s: scenarios run on the lab only; drop --scenario with the %s backend", o.Scenario, name)
	case len(o.Datapaths) > 0:
		return fmt.Errorf("--datapaths: the %s backend measures the cluster's own CNI; drop --datapaths", name)
	case len(o.MTUs) > 1:
		return fmt.Errorf("--mtu: the %s backend measures the cluster's MTU as it is; give at most one --mtu (it is not applied)", name)
	case o.Pin != "" && o.Pin != PinNone:
		return fmt.Errorf("--pin %s: the %s backend's processes run in pods; use --pin none", o.Pin, name)
	}
	return nil
}

// CPU placements (Options.Pin).
const (
	PinNone  = "none"
	PinSame  = "same"
	PinSplit = "split"
)

// Pins lists the accepted --pin values.
var Pins = []string{PinNone, PinSame, PinSplit}

// Profile returns the defaults of a named profile.
func Profile(name string) (Options, error) {
	o := Options{
		Profile:     name,
		Tests:       []string{engine.TCPStream, engine.TCPRR, engine.TCPCRR, engine.UDPStream, engine.HTTP},
		Flows:       []int{1, 32},
		HTTPClients: 32,
		Conntrack:   true,
		Pin:         PinNone,
		Wire:        lab.DefaultWire, // NIC-like in both profiles: the comparison the findings need
	}
	switch name {
	case "quick":
		// Short windows: a first look in under 3 minutes, not a verdict.
		// 5 repeats, so that two quick runs can be compared (3 against 3
		// can never be significant): 80 cells × 5 repeats × ~0.4 s per
		// client run ≈ 160 s on 2 cores.
		o.Repeat, o.Duration, o.Warmup, o.MTUs = 5, 200*time.Millisecond, 100*time.Millisecond, []int{1500}
	case "standard":
		// 2 s windows (1.5 s before): 98 cells (80 + 18 at MTU 9000) × 5
		// repeats × ~2.35 s per client run ≈ 19.3 min on 2 cores.
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
	return l
}

func (c cell) String() string {
	if c.sc != nil {
		return c.scenarioString()
	}
	return fmt.Sprintf("%s %s %s ×%d mtu %d", c.Datapath, c.Path, c.Test, c.Flows, c.MTU)
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
func (o Options) Validate(known []string) error {
	if err := o.validate(known); err != nil {
		return &ValidationError{err.Error()}
	}
	return nil
}

func (o Options) validate(known []string) error {
	if err := o.validateBackend(); err != nil {
		return err
	}
	for _, d := range o.Datapaths {
		if !slices.Contains(known, d) {
			return fmt.Errorf("--datapaths: unknown datapath %q (known: %s)", d, strings.Join(known, ", "))
		}
	}
	for _, t := range o.Tests {
		if !engine.ValidTest(t) {
			return fmt.Errorf("--tests: unknown test %q (known: %s)", t, strings.Join(engine.Tests, ", "))
		}
	}
	if len(o.Tests) == 0 {
		return fmt.Errorf("--tests: no test given")
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
	if o.Pin != "" && !slices.Contains(Pins, o.Pin) {
		return fmt.Errorf("--pin %q: must be one of %s", o.Pin, strings.Join(Pins, ", "))
	}
	if o.Wire != "" && !slices.Contains(lab.Wires, o.Wire) {
		return fmt.Errorf("--wire %q: must be one of %s", o.Wire, strings.Join(lab.Wires, ", "))
	}
	return o.validateScenario()
}
