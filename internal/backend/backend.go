// Package backend is what the suite measures on: the local lab (network
// namespaces, datapaths modelled on the CNIs) or a Kubernetes cluster (its
// real CNI). The suite, the results and the reports only see this
// interface, so that a lab run and a cluster run compare with
// `cnibench compare`.
//
// A Backend brings a Deployment up; a Deployment has datapaths, each with
// paths (a client place, a server address, the expected MTU); the suite
// runs `cnibench run …` at a path's client place and reads its JSON
// result, resets state between cells, and collects the backend's path
// evidence around every client run.
package backend

import (
	"context"
	"net/netip"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/pkg/result"
)

// ErrNotSupported marks what a backend cannot do here (recorded as
// "skipped: …", never as a failure).
var ErrNotSupported = internal.ErrNotSupported

// OptionError is a backend's refusal of an option or of what a run asks
// of it (the CLI makes it a usage error); Msg names the flag and the fix.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// Backend brings up the places to measure.
type Backend interface {
	// Name is the value of the results' "backend" label: "lab" or
	// "kubernetes".
	Name() string
	// Config describes the backend's options for the results' config
	// (datapaths, wire, CPU placement, …); nil if none.
	Config() map[string]string
	// Up deploys spec. On error the returned Deployment (possibly nil)
	// must still be brought Down: it holds what was created so far.
	Up(ctx context.Context, spec Spec) (Deployment, error)
}

// MTUSetter is a backend that builds its wire at the MTU it is given (the
// lab): only such a backend runs an MTU sweep (several --mtu); another
// measures the MTU it has.
type MTUSetter interface {
	SetsMTU() bool
}

// Events is how a backend reports to the run: progress lines and
// run-wide warnings (recorded in the results once each).
type Events struct {
	Progress func(format string, a ...any)
	Warn     func(warning string)
}

// Opener is a backend with run-wide state around its deployments (the
// lab's one-suite-per-host lock and its process spawner): the suite calls
// Open before the first Up and close after the last Down.
type Opener interface {
	Open(ctx context.Context, ev Events) (close func(), err error)
}

// Spec is what to deploy: the matrix at one MTU, or a scenario's
// deployment.
type Spec struct {
	// MTU of the wire between the nodes (lab); a cluster's is what it is.
	MTU int
	// Sweep marks a further MTU of an MTU sweep (only the MTU-sensitive
	// cells run on it: no variants).
	Sweep bool
	// Tests are the tests the run measures (a backend adds datapath
	// variants only where their test runs, e.g. the lab's conntrack
	// variants on tcp_crr).
	Tests []string
	// Scenario, when not nil, is the scenario the deployment is for.
	Scenario *ScenarioSpec
	// Token is the run's secret (CNIBENCH_TOKEN) for every server and
	// client the deployment starts.
	Token string
}

// ScenarioSpec is what a scenario needs of a deployment.
type ScenarioSpec struct {
	// Name is the scenario's name.
	Name string
	// Datapath is a datapath the scenario brings (a topology of its own,
	// e.g. the lab's l4lb); "" for the backend's own.
	Datapath string
	// Pods are extra pods (e.g. service backends on both nodes).
	Pods []Pod
	// AnyDatapath: the scenario needs only a datapath's client and server
	// pods, not the client's node and veth (which only some datapaths
	// expose), so every datapath with pods can run it.
	AnyDatapath bool
	// ServiceProxy: label the runs with what serves ClusterIP services
	// (a cluster's kube-proxy and its mode, or the CNI that replaces it),
	// so that a report's curves are named by it.
	ServiceProxy bool
}

// Pod is an extra pod a scenario needs.
type Pod struct {
	// Role names it (unique).
	Role string
	// Node is 0 for the client's node, 1 for the server's.
	Node int
	// IP is the address the lab gives it (a cluster assigns its own).
	IP netip.Addr
}

// Datapath is one datapath of a deployment.
type Datapath struct {
	Name        string
	Description string
	PacketPath  string
	// Skipped is why it cannot run here ("" if it runs); a skipped
	// datapath has no paths.
	Skipped string
	// Config is the datapath's part of its runs' configuration (the lab's
	// wire, expected path MTU, pod MTU); a path's own config overrides it.
	Config map[string]string
	// OnlyTests and OnlyPaths restrict the matrix's cells of a variant
	// datapath (e.g. a NOTRACK variant runs tcp_crr cross-node only, next
	// to its base); nil: every test and path.
	OnlyTests, OnlyPaths []string
}

// Path is one client→server path of a datapath, with its server started.
type Path struct {
	// Kind is the path's label (same-node, cross-node, pod-to-service,
	// hairpin, host-network, …).
	Kind string
	// Client is where clients of this path run (opaque to the suite).
	Client Place
	// Target is the server's address (host:port) as the client dials it
	// (`cnibench run --target`).
	Target string
	// Args, if not nil, gives the client's target flags for a test
	// instead (e.g. --service VIP:PORT behind a load-balanced service);
	// a non-empty why means the path cannot carry that test, and the cell
	// is recorded as skipped with that reason.
	Args func(test string) (args []string, why string)
	// PathMTU is the MTU the path should carry end to end, PodMTU the
	// client interface's (0: unknown).
	PathMTU, PodMTU int
	// Wire names the medium between the nodes ("" if unknown).
	Wire string
	// Labels are added to every run of this path (client and server
	// node, …).
	Labels map[string]string
}

// Place is where a process runs: a lab namespace, a pod.
type Place interface {
	String() string
}

// Deployment is a backend brought up, its servers listening.
type Deployment interface {
	// Datapaths lists the datapaths asked for, skipped ones included.
	Datapaths() []Datapath
	// Paths lists the runnable paths of a datapath.
	Paths(datapath string) []Path
	// Run runs `cnibench ARGS` (a client) at place and returns its
	// output; on ctx's end the client is interrupted so that it reports
	// what it measured.
	Run(ctx context.Context, place Place, args []string) (stdout, stderr []byte, err error)
	// Reset clears connection-tracking state before a cell and returns
	// the TIME_WAIT sockets left (-1: unknown); ErrNotSupported if the
	// backend cannot.
	Reset(ctx context.Context, datapath string) (timeWait int, err error)
	// Evidence starts collecting path counters of a datapath around one
	// client run; nil if the backend has none.
	Evidence(datapath string) Evidence
	// Labels are added to every run (backend, cluster, CNI, …).
	Labels() map[string]string
	// Down stops every server and removes everything Up created.
	Down(ctx context.Context) error
}

// Evidence is one collection of path counters.
type Evidence interface {
	// End returns the counters' deltas since the collection began, and
	// warnings about reading them.
	End() (metrics map[string]float64, warnings []string)
	// Check returns warnings about a path whose measured metrics (the
	// client's and End's) show that packets took another way than the
	// datapath claims.
	Check(path string, metrics map[string]float64) []string
}

// Starter is a Deployment that starts long-running processes for
// scenarios (servers, helpers such as a userspace tunnel).
type Starter interface {
	// Start starts `cnibench ARGS` at place with stdin (secrets stay off
	// the command line) and returns once its first line on stderr says it
	// is ready ("… listening on …" or "ready…"); any other first line is
	// the error.
	Start(ctx context.Context, place Place, stdin []byte, args []string) (*Process, error)
}

// Process is a long-running process a Starter started.
type Process struct {
	// PID is its process id where the backend knows it (its CPU time is in
	// /proc/PID/stat), 0 otherwise.
	PID int
	// Stop ends it (SIGTERM, then SIGKILL after 5 s) and waits for it.
	Stop func()
}

// CPUProfiler is a Deployment that can take a system-wide CPU profile
// (kernel and user stacks, internal/profile) of a client run's measured
// window.
type CPUProfiler interface {
	// CanProfile says why this deployment cannot profile (an error
	// wrapping ErrNotSupported: the kernel, the privileges), nil if it
	// can.
	CanProfile() error
	// RunProfiled is Run that also leaves the profile of the client's
	// measured window at file, as gzipped pprof, sampling every CPU at hz
	// per second. Without an error, a missing file means the client
	// measured no window.
	RunProfiled(ctx context.Context, place Place, args []string, file string, hz int) (stdout, stderr []byte, err error)
}

// Finder is a Deployment with checks of its own (a cluster's MTU,
// NetworkPolicy enforcement, encryption on the wire, CNI identification
// and footprint). The suite calls Findings once, after the matrix and
// before Down; measured returns the matrix's runs whose labels include
// match, so that a finding can price itself with measured figures.
type Finder interface {
	Findings(ctx context.Context, measured func(match map[string]string) []result.Run) []result.Finding
}

// TargetArgs returns the client's target flags of a path for a test, or
// why the path cannot carry it.
func (p Path) TargetArgs(test string) ([]string, string) {
	if p.Args != nil {
		return p.Args(test)
	}
	return []string{"--target", p.Target}, ""
}
