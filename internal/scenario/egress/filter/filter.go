package filter

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"sync"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by Probe when this machine cannot run a
// mechanism (a missing program, kernel feature or privilege); the scenario
// reports it as "skipped: <reason>".
var ErrNotSupported = internal.ErrNotSupported

// Target is where a filter goes: the client pod's node namespace and the
// node-side interface of the pod's veth. Packets the pod sends arrive on Dev
// (ingress on the node); the filter drops those addressed to a deny CIDR.
// Netfilter mechanisms match them in the forward path (iifname Dev), BPF
// mechanisms at Dev's TCX ingress.
type Target struct {
	// NSPath is the node namespace's bind mount (/run/netns/NAME).
	NSPath string
	// NSFd is an open descriptor of that namespace (valid while the lab is
	// up), for libraries that take one (google/nftables WithNetNSFd,
	// netlink.NewHandleAt).
	NSFd int
	// Dev is the node-side interface the pod's egress arrives on.
	Dev string
	// Do runs f on an OS thread inside the node namespace (lab.NS.Do), for
	// code that must create sockets or links there.
	Do func(f func() error) error
	// Local filters the namespace's own egress instead (a pod filtering
	// itself, the cluster's raw points): Dev is the pod's interface, and
	// the packets are the namespace's own, leaving by Dev: netfilter
	// matches them in the output path (oifname Dev), BPF at Dev's TCX
	// egress.
	Local bool
}

// Options change how a filter is built.
type Options struct {
	// EstablishedBypass puts a leading "ct state established,related
	// accept" in front of the deny set, as Calico installs: then only each
	// new connection's first packet traverses the set. Without it every
	// packet does. BPF mechanisms have no kernel conntrack and ignore it
	// (Traversal reports what was built).
	EstablishedBypass bool
}

// Traversal says which packets are checked against the whole deny set.
const (
	TraversalEveryPacket   = "every-packet"
	TraversalNewConnection = "new-connection"
)

// Traversals lists the accepted traversal values.
var Traversals = []string{TraversalEveryPacket, TraversalNewConnection}

// Stats are a filter's counters and sizes at one moment.
type Stats struct {
	// Dropped is the number of packets the filter dropped because their
	// destination is in a deny CIDR (the proof that it enforces).
	Dropped uint64
	// Rules is the number of deny CIDRs loaded.
	Rules int
	// KernelBytes is the kernel memory the filter's rules or maps use as the
	// kernel reports it (BPF map memlock, ipset "Size in memory", ...); 0 if
	// the mechanism cannot report it (then KernelBytesKnown is false).
	KernelBytes      int64
	KernelBytesKnown bool
}

// LoadInfo describes how a Load went, for the results' config and metrics.
type LoadInfo struct {
	// Traversal is TraversalEveryPacket or TraversalNewConnection.
	Traversal string
	// Method names how the rules were loaded, e.g. "iptables-restore
	// --noflush (nft backend)", "ipset restore", "google/nftables, 1500
	// prefixes per flush", "BPF_MAP_UPDATE_BATCH, 65536 per call".
	Method string
	// Batches is the number of kernel round trips (flushes, batch calls,
	// restore processes) the load took.
	Batches int
	// LoaderPeakRSS is the peak RSS of an external loader process (ipset,
	// iptables-restore) in bytes, 0 when the load ran in-process.
	LoaderPeakRSS int64
}

// Filter is a loaded filter. Its methods are safe to call from one goroutine
// at a time.
type Filter interface {
	// Add and Remove change one CIDR in the loaded set (what a CNI does when
	// one policy changes).
	Add(ctx context.Context, p netip.Prefix) error
	Remove(ctx context.Context, p netip.Prefix) error
	// Stats reads the counters and sizes.
	Stats(ctx context.Context) (Stats, error)
	// Detach stops enforcement without freeing the rules where the mechanism
	// can (the negative control: a probe then gets through), Attach resumes
	// it.
	Detach(ctx context.Context) error
	Attach(ctx context.Context) error
	// Close removes everything Load created. It runs to the end even if ctx
	// is cancelled and may be called more than once.
	Close(ctx context.Context) error
}

// Mechanism is one way of filtering.
type Mechanism interface {
	// Name is the mechanism's name in flags, labels and reports.
	Name() string
	// Probe returns nil if the mechanism can run here, or an error wrapping
	// ErrNotSupported with the reason.
	Probe() error
	// MaxRules is the largest N the mechanism is run with (a documented
	// bound; larger N are recorded "too large", never dropped silently).
	MaxRules() int
	// Load installs a filter at t dropping packets to any of cidrs. cidrs
	// are non-overlapping. On error nothing of it is left behind.
	Load(ctx context.Context, t Target, cidrs []netip.Prefix, o Options) (Filter, LoadInfo, error)
}

// LocalProber is a Mechanism whose Probe needs more than a pod filtering
// itself has (e.g. a scratch namespace): ProbeLocal checks what such a pod
// can.
type LocalProber interface {
	ProbeLocal() error
}

var (
	regMu sync.Mutex
	reg   = map[string]func() Mechanism{}
)

// Register makes a mechanism available by name; it panics on a duplicate
// (a programming error, caught by any test).
func Register(name string, f func() Mechanism) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := reg[name]; dup {
		panic("egress: mechanism registered twice: " + name)
	}
	reg[name] = f
}

// Mechanisms lists the registered mechanism names, sorted.
func Mechanisms() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(reg))
	for n := range reg {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns a new instance of the named mechanism.
func Lookup(name string) (Mechanism, error) {
	regMu.Lock()
	f, ok := reg[name]
	regMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown egress mechanism %q (known: %v)", name, Mechanisms())
	}
	return f(), nil
}
