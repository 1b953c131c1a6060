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
	"errors"

	"github.com/cnibench/cnibench/pkg/result"
)

// ErrNotSupported marks what a backend cannot do here (recorded as
// "skipped: …", never as a failure).
var ErrNotSupported = errors.New("not supported")

// Backend brings up the places to measure.
type Backend interface {
	// Name is the value of the results' "backend" label: "lab" or
	// "kubernetes".
	Name() string
	// Up deploys spec. On error the returned Deployment (possibly nil)
	// must still be brought Down: it holds what was created so far.
	Up(ctx context.Context, spec Spec) (Deployment, error)
}

// Spec is what to deploy.
type Spec struct {
	// Datapaths selects the lab's datapaths; a cluster has one (its CNI)
	// and ignores it.
	Datapaths []string
	// MTU of the wire between the nodes (lab); a cluster's is what it is.
	MTU int
	// Wire is the lab's wire model.
	Wire string
	// Token is the run's secret (CNIBENCH_TOKEN) for every server and
	// client the deployment starts.
	Token string
}

// Datapath is one datapath of a deployment.
type Datapath struct {
	Name        string
	Description string
	PacketPath  string
	// Skipped is why it cannot run here ("" if it runs); a skipped
	// datapath has no paths.
	Skipped string
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
