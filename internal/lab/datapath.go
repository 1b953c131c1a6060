package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
)

// PathKind names a client→server path through a datapath.
type PathKind string

const (
	// NodeToNode is node1 → node2 over the wire, no pods (baseline).
	NodeToNode PathKind = "node-to-node"
	// CrossNode is a pod on node1 → the server pod on node2.
	CrossNode PathKind = "cross-node"
	// SameNode is a pod on node2 → the server pod on node2.
	SameNode PathKind = "same-node"
)

// Datapath is one way of connecting pods. A value is used for one lab: the
// registry makes a new one for each Up.
type Datapath interface {
	// Name is the registry name, e.g. "veth-routing".
	Name() string
	// Description is one line for listings.
	Description() string
	// PacketPath describes, for reports, what a packet crosses from the
	// client to the server.
	PacketPath() string
	// Probe checks at run time that the kernel has what the datapath needs.
	// It returns nil or an error wrapping ErrNotSupported with the reason.
	Probe() error
	// Setup builds the datapath's namespaces (through env) and returns the
	// paths it offers. On error, Setup need not undo anything: the lab
	// deletes env's namespaces and calls Teardown.
	Setup(ctx context.Context, env *Env) (*Topology, error)
	// Teardown releases what outlives the namespaces (BPF programs, file
	// descriptors). The lab deletes the namespaces afterwards. It must be
	// safe to call after a failed or partial Setup.
	Teardown(ctx context.Context) error
}

// Topology is what a datapath built.
type Topology struct {
	Paths []Endpoint
	// PodMTU is the MTU configured on the pods' interfaces (the wire MTU for
	// baseline).
	PodMTU int
	// PathMTU is the path MTU a client should see towards the server.
	PathMTU int
	// Nodes are the two node namespaces.
	Nodes [2]*NS
	// Wire is the wire mode between the nodes (WireNIC or WireVeth).
	Wire string
	// Pods are every pod built, the standard ones and Options.ExtraPods
	// (routed datapaths; nil for the others).
	Pods []Pod
}

// Pod returns the pod of a role.
func (t *Topology) Pod(role string) (Pod, bool) {
	for _, p := range t.Pods {
		if p.Role == role {
			return p, true
		}
	}
	return Pod{}, false
}

// Endpoint is one client/server pair.
type Endpoint struct {
	Kind     PathKind
	Client   *NS
	Server   *NS
	ServerIP netip.Addr
	// ClientNode is the namespace of the node the client pod runs on and
	// ClientNodeDev the node-side interface of the client pod's veth (where
	// the pod's egress enters the node): where an egress filter goes. Only
	// the routed datapaths (veth-routing family) fill them; nil and "" for
	// the others.
	ClientNode    *NS
	ClientNodeDev string
}

// Path returns the endpoint of a kind.
func (t *Topology) Path(kind PathKind) (Endpoint, bool) {
	for _, e := range t.Paths {
		if e.Kind == kind {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Env is what a datapath's Setup gets from the lab.
type Env struct {
	Logger   *slog.Logger
	RunID    string
	Datapath string
	WireMTU  int
	// Wire is the wire mode (WireNIC or WireVeth).
	Wire string
	// ExtraPods are Options.ExtraPods (validated).
	ExtraPods []PodSpec

	mu         sync.Mutex
	namespaces []*NS
}

// Namespaces returns the namespaces created through env so far.
func (e *Env) Namespaces() []*NS {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.namespaces)
}

// PathClaims says what a datapath's pod traffic crosses; CheckPath compares
// it with what a run measured.
type PathClaims struct {
	// Conntrack: the nodes' connection tracking tracks pod connections.
	// False for NOTRACK variants and for datapaths that bypass netfilter.
	Conntrack bool
	// NftForward: the nodes carry the lab's nft forward chain.
	NftForward bool
	// BPF: a BPF program redirects pod traffic past the node's forwarding
	// path (the forward chain sees none of it).
	BPF bool
	// VXLAN: cross-node pod traffic is encapsulated in VXLAN.
	VXLAN bool
}

// Claimer is implemented by datapaths that state their PathClaims.
type Claimer interface {
	Claims() PathClaims
}

// Factory makes a datapath.
type Factory func() Datapath

type registration struct {
	name        string
	description string
	factory     Factory
	hidden      bool
	optIn       bool
}

var (
	regMu       sync.Mutex
	registry    []registration
	registryErr error
)

// Register adds a datapath to the registry. Datapaths register from init
// functions; a duplicate name is an error reported by NewDatapath.
func Register(f Factory) { register(f, false, false) }

// RegisterOptIn adds a datapath that is listed and runs when --datapaths
// names it, but is not in the default matrix: a model built to answer one
// question (e.g. ebpf-host-routing-redirect, for the peer redirect's
// saving), whose cells would lengthen every default run.
func RegisterOptIn(f Factory) { register(f, false, true) }

// OptIn tells whether a datapath was registered with RegisterOptIn.
func OptIn(name string) bool {
	regMu.Lock()
	defer regMu.Unlock()
	for _, r := range registry {
		if r.name == name {
			return r.optIn
		}
	}
	return false
}

// RegisterHidden adds a datapath that NewDatapath and Describe know but
// Names does not list: a topology that only a scenario brings up (e.g. a
// load-balancer node with workers and external clients), never a cell of
// the datapath matrix. Such a datapath lives with its scenario and
// registers from its package's init, so it exists wherever the scenario
// is linked.
func RegisterHidden(f Factory) { register(f, true, false) }

func register(f Factory, hidden, optIn bool) {
	d := f()
	regMu.Lock()
	defer regMu.Unlock()
	for _, r := range registry {
		if r.name == d.Name() {
			registryErr = errors.Join(registryErr, fmt.Errorf("datapath %q registered twice", d.Name()))
			return
		}
	}
	registry = append(registry, registration{name: d.Name(), description: d.Description(), factory: f, hidden: hidden, optIn: optIn})
	slices.SortStableFunc(registry, func(a, b registration) int { return rank(a.name) - rank(b.name) })
}

// listOrder is the order listings show the built-in datapaths in: the
// baseline first, then from the kube-proxy/Calico style to eBPF.
var listOrder = []string{
	"baseline", "veth-routing", "veth-routing-notrack", "veth-routing-cost", "bridge", "bridge-notrack", "vxlan", "vxlan-notrack",
	"ebpf-host-routing", "ebpf-host-routing-bare", "ebpf-host-routing-redirect", "netkit",
}

func rank(name string) int {
	if i := slices.Index(listOrder, name); i >= 0 {
		return i
	}
	return len(listOrder)
}

// Names lists the registered datapaths in registration order (hidden ones
// excepted).
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := make([]string, 0, len(registry))
	for _, r := range registry {
		if !r.hidden {
			names = append(names, r.name)
		}
	}
	return names
}

// NewDatapath makes a datapath by name.
func NewDatapath(name string) (Datapath, error) {
	regMu.Lock()
	defer regMu.Unlock()
	if registryErr != nil {
		return nil, registryErr
	}
	for _, r := range registry {
		if r.name == name {
			return r.factory(), nil
		}
	}
	names := make([]string, 0, len(registry))
	for _, r := range registry {
		names = append(names, r.name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("unknown datapath %q: %w", name, ErrNotSupportedOnOS)
	}
	return nil, fmt.Errorf("unknown datapath %q (known: %v)", name, names)
}

// Describe returns a datapath's description, or "" if it is unknown.
func Describe(name string) string {
	regMu.Lock()
	defer regMu.Unlock()
	for _, r := range registry {
		if r.name == name {
			return r.description
		}
	}
	return ""
}

// CounterReporter is implemented by datapaths that count what they did (per
// node), for tests and reports. Keys look like "node1.redirect_peer".
// The eBPF host-routing datapaths report redirect_peer, redirect_host,
// redirect_neigh, pass, pass_fib and drop, and unless bare ct_new,
// ct_established, ct_reply and policy_denied.
type CounterReporter interface {
	Counters() (map[string]uint64, error)
}
