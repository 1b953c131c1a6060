package lab

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
)

// MTU bounds accepted for the wire.
const (
	MinMTU     = 1280
	MaxMTU     = 65535
	DefaultMTU = 1500
)

// Wire modes: what the node-to-node link behaves like.
const (
	// WireVeth is a bare veth pair: GSO packets of up to 64 KiB cross
	// unsegmented, the receiver does no GRO, checksums are never computed.
	WireVeth = "veth"
	// WireNIC makes the veth pair behave like a NIC with checksum offload
	// but without TSO: the sender's wire device segments every packet to the
	// MTU (software GSO), the receiver's merges them again with GRO (veth
	// NAPI mode). See docs/lab.md.
	WireNIC = "nic"
	// DefaultWire is the wire mode when Options.Wire is empty.
	DefaultWire = WireNIC
)

// Wires lists the wire modes.
var Wires = []string{WireNIC, WireVeth}

// Options configure a lab.
type Options struct {
	// Datapaths to build, by registry name; empty means all registered.
	Datapaths []string
	// MTU of the wire between the nodes; 0 means DefaultMTU.
	MTU int
	// Wire is the wire mode (WireNIC or WireVeth); empty means DefaultWire.
	Wire string
	// RunID names the lab's namespaces; empty means a new random id.
	RunID string
	// Detached marks a lab meant to outlive this process (`cnibench lab
	// up`): status does not report it as leaked once this process exits.
	// Datapaths whose state lives in this process (BPF links) are skipped.
	Detached bool
	// ExtraPods are pods the routed datapaths add to the standard three
	// (e.g. a services scenario's backends on both nodes); the other
	// datapaths build none. Topology.Pods lists what was built.
	ExtraPods []PodSpec
}

// PodSpec is a pod to build (a standard one, or an extra one): its role
// (namespace name part), node (0 or 1) and address, inside that node's pod
// CIDR.
type PodSpec struct {
	Role string
	Node int
	IP   netip.Addr
}

// HostIf is the name of the pod's veth end in its node.
func (p PodSpec) HostIf() string { return "veth-" + p.Role }

// Pod is a pod a datapath built.
type Pod struct {
	Role string
	Node int
	NS   *NS
	IP   netip.Addr
	// HostDev is the node-side interface of the pod's veth (routed
	// datapaths; "" elsewhere).
	HostDev string
}

// Lab is a set of datapaths, each with its own nodes and pods. Build it with
// New and Up; Down removes everything Up created.
type Lab struct {
	logger *slog.Logger

	mu       sync.Mutex
	runID    string
	opts     Options
	deployed []*deployment
	skipped  map[string]error
	state    *State
}

type deployment struct {
	dp   Datapath
	env  *Env
	topo *Topology
}

// New returns a lab that is not up yet.
func New(logger *slog.Logger) *Lab {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Lab{logger: logger, skipped: map[string]error{}}
}

// RunID returns the run id of a lab that is up.
func (l *Lab) RunID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runID
}

// Datapaths lists the datapaths that were built, in the requested order.
func (l *Lab) Datapaths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.deployed))
	for _, d := range l.deployed {
		names = append(names, d.dp.Name())
	}
	return names
}

// Skipped returns the requested datapaths that cannot run on this machine,
// with the reason (an error wrapping ErrNotSupported).
func (l *Lab) Skipped() map[string]error {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]error, len(l.skipped))
	for k, v := range l.skipped {
		out[k] = v
	}
	return out
}

// Datapath returns a built datapath (for its description and packet path)
// and its topology.
func (l *Lab) Datapath(name string) (Datapath, *Topology, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.deployed {
		if d.dp.Name() == name {
			return d.dp, d.topo, nil
		}
	}
	if err, ok := l.skipped[name]; ok {
		return nil, nil, fmt.Errorf("datapath %s skipped: %w", name, err)
	}
	return nil, nil, fmt.Errorf("datapath %s is not part of lab %s", name, l.runID)
}

// Endpoint returns the client namespace, server namespace and server IP of a
// datapath's path kind: NodeToNode for baseline, CrossNode and SameNode for
// the pod datapaths.
func (l *Lab) Endpoint(datapath string, kind PathKind) (Endpoint, error) {
	_, topo, err := l.Datapath(datapath)
	if err != nil {
		return Endpoint{}, err
	}
	e, ok := topo.Path(kind)
	if !ok {
		kinds := make([]string, 0, len(topo.Paths))
		for _, p := range topo.Paths {
			kinds = append(kinds, string(p.Kind))
		}
		return Endpoint{}, fmt.Errorf("datapath %s has no %s path (has %v)", datapath, kind, kinds)
	}
	return e, nil
}

// State returns a copy of what the lab recorded in its state file.
func (l *Lab) State() *State {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == nil {
		return nil
	}
	s := *l.state
	s.Datapaths = slices.Clone(s.Datapaths)
	return &s
}

// RunStatus describes the lab namespaces of one run id on this machine.
type RunStatus struct {
	RunID      string
	Namespaces []string
	// State is the run's state file, nil if there is none.
	State *State
	// OwnerAlive is true if the process that built the lab still runs or,
	// for namespaces without a state file, if some process is inside one of
	// them or holds one open.
	OwnerAlive bool
	// Leaked is true if nobody owns the namespaces any more: the owner is
	// gone and the lab was not left up on purpose (lab up).
	Leaked bool
}

// CleanupResult tells what Cleanup removed and kept.
type CleanupResult struct {
	Removed []string // run ids
	Kept    []string // run ids owned by a live process (without Force)
}

// CleanupOptions configure Cleanup.
type CleanupOptions struct {
	// Force also removes labs whose owning process still runs (a benchmark
	// in progress).
	Force bool
	// RunID limits the cleanup to one run.
	RunID string
}

// ValidateOptions fills defaults and checks opts against the registry.
func ValidateOptions(opts Options) (Options, error) {
	if opts.MTU == 0 {
		opts.MTU = DefaultMTU
	}
	if opts.MTU < MinMTU || opts.MTU > MaxMTU {
		return opts, fmt.Errorf("MTU %d: must be between %d and %d", opts.MTU, MinMTU, MaxMTU)
	}
	if opts.Wire == "" {
		opts.Wire = DefaultWire
	}
	if !slices.Contains(Wires, opts.Wire) {
		return opts, fmt.Errorf("wire mode %q: must be one of %v", opts.Wire, Wires)
	}
	if opts.RunID != "" {
		if err := ValidateRunID(opts.RunID); err != nil {
			return opts, err
		}
	}
	if err := validatePods(opts.ExtraPods); err != nil {
		return opts, err
	}
	known := Names()
	if len(opts.Datapaths) == 0 {
		opts.Datapaths = known
	}
	seen := map[string]bool{}
	for _, d := range opts.Datapaths {
		if !slices.Contains(known, d) && Describe(d) == "" {
			return opts, fmt.Errorf("unknown datapath %q (known: %v)", d, known)
		}
		if seen[d] {
			return opts, fmt.Errorf("datapath %q listed twice", d)
		}
		seen[d] = true
	}
	if len(opts.Datapaths) == 0 {
		return opts, fmt.Errorf("no datapath: %w", ErrNotSupportedOnOS)
	}
	return opts, nil
}
