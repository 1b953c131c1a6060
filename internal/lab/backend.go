package lab

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// BackendName is the lab backend's name (--backend lab, the results'
// config "backend").
const BackendName = "lab"

// ScenarioDatapath is the datapath a scenario runs on without --datapaths:
// the routed datapath, whose client node and veth the scenarios program.
const ScenarioDatapath = "veth-routing"

// NoTrack is the datapath variant the conntrack scenario compares with
// veth-routing (seed 000: many-flow TCP_CRR collapses on conntrack; NOTRACK
// fixes it).
const NoTrack = "veth-routing-notrack"

// CPU placements (BackendOptions.Pin).
const (
	PinNone  = "none"
	PinSame  = "same"
	PinSplit = "split"
)

// Pins lists the accepted --pin values.
var Pins = []string{PinNone, PinSame, PinSplit}

// DefaultLockPath is held by a lab run for its whole length: one suite per
// host, since two would measure each other.
var DefaultLockPath = filepath.Join(RunDir, "suite.lock")

// BackendOptions are the lab backend's options: what only the lab has
// (its datapaths, wire, CPU placement, conntrack variants).
type BackendOptions struct {
	// Datapaths to build; empty: every registered datapath except the
	// variants (-notrack, -bare), which join through the conntrack
	// variants (Conntrack).
	Datapaths []string
	// Conntrack adds the variants of the selected datapaths (NoTrack,
	// bridge-notrack, …, ebpf-host-routing-bare) to the tcp_crr cross-node
	// cells (the conntrack scenario).
	Conntrack bool
	// NoBaseline keeps a Datapaths subset without the baseline datapath,
	// which is otherwise added for the graded summary.
	NoBaseline bool
	// Pin places servers and clients on CPUs: PinNone (the scheduler
	// decides), PinSame (both on one CPU) or PinSplit (servers on one CPU,
	// clients on another), as `make bench -pin` does; empty means PinNone.
	Pin string
	// Wire is the wire mode (Wires); empty means DefaultWire.
	Wire string
	// Binary is the cnibench executable run inside the namespaces; empty:
	// this one.
	Binary string
	// LockPath is the lock held for the whole run; empty means
	// DefaultLockPath.
	LockPath string
	Logger   *slog.Logger
}

// Validate checks the options; errors name the flag.
func (o BackendOptions) Validate() error {
	known := Names()
	for _, d := range o.Datapaths {
		if !slices.Contains(known, d) {
			return fmt.Errorf("--datapaths: unknown datapath %q (known: %s)", d, strings.Join(known, ", "))
		}
	}
	if o.Pin != "" && !slices.Contains(Pins, o.Pin) {
		return fmt.Errorf("--pin %q: must be one of %s", o.Pin, strings.Join(Pins, ", "))
	}
	if o.Wire != "" && !slices.Contains(Wires, o.Wire) {
		return fmt.Errorf("--wire %q: must be one of %s", o.Wire, strings.Join(Wires, ", "))
	}
	return nil
}

// withDefaults fills the defaults: every non-variant datapath, the
// baseline added, no pinning, the NIC-like wire.
func (o BackendOptions) withDefaults() BackendOptions {
	known := Names()
	if len(o.Datapaths) == 0 {
		o.Datapaths = defaultDatapaths(known)
	}
	if !o.NoBaseline && !slices.Contains(o.Datapaths, "baseline") && slices.Contains(known, "baseline") {
		// The graded summary compares every datapath with the baseline.
		o.Datapaths = append([]string{"baseline"}, o.Datapaths...)
	}
	if o.Pin == "" {
		o.Pin = PinNone
	}
	if o.Wire == "" {
		o.Wire = DefaultWire
	}
	if o.LockPath == "" {
		o.LockPath = DefaultLockPath
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// config is the options' part of the results' config (the keys lab runs
// always had).
func (o BackendOptions) config() map[string]string {
	return map[string]string{
		"datapaths": strings.Join(o.Datapaths, ","),
		"conntrack": strconv.FormatBool(o.Conntrack),
		"pin":       o.Pin,
		"wire":      o.Wire,
		"baseline":  strconv.FormatBool(!o.NoBaseline),
	}
}

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
// except the variants, which join through the conntrack scenario, and the
// opt-in ones (RegisterOptIn).
func defaultDatapaths(known []string) []string {
	var out []string
	for _, d := range known {
		if variantBase(d, known) == "" && !OptIn(d) {
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

// procsPerCell is the number of busy processes a cell runs: one client and
// one server.
const procsPerCell = 2

// cpuWarning is the warning for a host with ncpu usable CPUs, "" if none.
func cpuWarning(ncpu int) string {
	if ncpu >= procsPerCell {
		return ""
	}
	return fmt.Sprintf("this host has %d CPU(s) for the %d busy processes of each cell (client and server): they take turns, so the results measure the scheduler as much as the datapath",
		ncpu, procsPerCell)
}

// SetsMTU: the lab builds its wire at each --mtu (backend.MTUSetter).
func (b *Backend) SetsMTU() bool { return true }

// Access is what only the lab gives a scenario (Deployment.LabAccess): one
// datapath's topology, its endpoint and the cgroup of the run's processes.
type Access struct {
	// Endpoint is the cross-node path (client and server pods, the
	// client's node and veth); for a topology of its own, its first path
	// if it has any.
	Endpoint Endpoint
	Topology *Topology
	Datapath Datapath
	// Cgroup is the cgroup v2 directory every client and server of the run
	// runs in (where socket-level hooks attach); "" if none.
	Cgroup string
}

// String names the namespace: an NS is a place where the lab backend runs
// processes (backend.Place).
func (n *NS) String() string { return n.Name }
