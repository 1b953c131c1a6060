// Package scenario is the small interface the suite drives a scenario
// through: something that changes the lab (filters, services, tunnels)
// before the ordinary cells run against it, at a number of points (e.g.
// mechanism × rule count), and records what the change itself cost.
//
// The suite asks a Scenario for its Points once, then, for every repeat and
// every point that is not skipped, calls Prepare, runs the point's cells
// with the point's labels added, attaches Prepared.Metrics to every repeat
// it measured, and calls Prepared.Close (whose metrics are attached too).
// Scenario.Close releases what the scenario set up in the lab for all its
// points. A point that cannot run here carries its reason in Skip: it is
// recorded ("skipped: <reason>" or "too large: <reason>"), never dropped.
//
// The egress-filter scenario (internal/scenario/egress) is the first; the
// services and encryption scenarios implement the same interface.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/pkg/result"
)

// LabelScenario is the label every result of a scenario carries, with the
// scenario's Name as its value.
const LabelScenario = "scenario"

// ErrTooLarge is wrapped by a Point's Skip when the point exceeds a
// documented bound of what it would run (a mechanism's MaxRules): it is
// recorded "too large", not "skipped".
var ErrTooLarge = errors.New("too large")

// Point is one set of scenario parameters (e.g. mechanism=ipset, rules=1000).
type Point struct {
	// Labels are added to every result measured at this point; they include
	// LabelScenario.
	Labels map[string]string
	// Skip, when not nil, says why this point is not run on this machine.
	Skip error
}

// SkipReason is how a skipped point is recorded: "too large: …" for
// ErrTooLarge, "skipped: …" otherwise; "" if the point runs.
func (p Point) SkipReason() string {
	switch {
	case p.Skip == nil:
		return ""
	case errors.Is(p.Skip, ErrTooLarge):
		return "too large: " + strings.TrimPrefix(p.Skip.Error(), ErrTooLarge.Error()+": ")
	}
	return "skipped: " + p.Skip.Error()
}

// ErrNeedsLab is wrapped by the error of a point that only the lab can
// prepare (it programs the lab's namespaces): on another backend the point
// is recorded "skipped: <reason>", never refused for the whole run.
var ErrNeedsLab = fmt.Errorf("needs the lab backend: %w", backend.ErrNotSupported)

// Env is where a point is prepared: a datapath of a deployment (the lab's
// or a cluster's), its cross-node path, and places to start servers and
// helpers and run clients. What only one backend can do is reached through
// Access.
type Env struct {
	// Deployment is the backend's deployment the point runs on.
	Deployment backend.Deployment
	// Datapath names the datapath the point runs on.
	Datapath string
	// Path is the datapath's cross-node path with its server (zero for a
	// scenario on a topology of its own, OwnDatapath).
	Path   backend.Path
	Logger *slog.Logger
	// Serve starts `cnibench serve ARGS` at place with the run's token,
	// the way the suite starts its servers, and returns once it listens.
	// Nil outside the suite or where the deployment cannot start
	// processes.
	Serve func(ctx context.Context, place backend.Place, args ...string) (*Server, error)
	// Start starts `cnibench ARGS` at place (a long-running helper, e.g. a
	// userspace tunnel) the same way, with stdin (secrets stay off the
	// command line), and returns once the first line it writes to stderr
	// starts with "ready"; any other first line is the error. Nil outside
	// the suite or where the deployment cannot start processes.
	Start func(ctx context.Context, place backend.Place, stdin []byte, args ...string) (*Server, error)
	// Run runs one `cnibench run ARGS` client at place as the suite runs
	// its cells (same cgroup, CPUs and token) and returns its result. Nil
	// outside the suite.
	Run func(ctx context.Context, place backend.Place, args ...string) (*result.Result, error)
}

// Access returns what one backend gives a scenario for env's datapath:
// env's deployment asserted to D — an interface the scenario declares
// itself for what it needs of that backend, as kind's providers are asked
// for what they can do (the lab's deployments have
// LabAccess(datapath) (*lab.Access, error), a cluster's ClusterAccess) —
// and access called on it; an error wrapping missing (ErrNeedsLab,
// ErrNeedsCluster) when the deployment is another backend's. The base
// package names no backend:
//
//	type labDeployment interface {
//		LabAccess(datapath string) (*lab.Access, error)
//	}
//
//	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
func Access[D, A any](env Env, missing error, access func(D, string) (A, error)) (A, error) {
	d, ok := env.Deployment.(D)
	if !ok {
		var zero A
		return zero, missing
	}
	return access(d, env.Datapath)
}

// Server is a process started through Env.Serve or Env.Start.
type Server = backend.Process

// OwnDatapath is implemented by scenarios that run on a topology of their
// own (a hidden lab datapath, e.g. l4lb's load-balancer node, workers and
// external clients): the suite builds only that datapath, starts no server
// of its own, and every cell's client comes from the prepared point's
// Targeter.
type OwnDatapath interface {
	Datapath() string
}

// Cell is one measurement of a point: a test with a flow count and an
// optional fixed rate, under the point's labels plus Labels. Path is the
// cell's path label ("" = the endpoint's path, e.g. cross-node).
type Cell struct {
	Test   string
	Flows  int
	Rate   string
	Path   string
	Labels map[string]string
}

// AnyDatapath is implemented by scenarios that need only a datapath's
// client and server pods (e.g. apps: daemons in the server pod, clients in
// the client pod), not the client's node and veth: every datapath with pods
// can run them, not only the routed ones.
type AnyDatapath interface {
	AnyDatapath() bool
}

// ServiceProxyLabeler is implemented by scenarios whose runs on a cluster
// are labelled with what serves its ClusterIP services
// (backend.ScenarioSpec.ServiceProxy), e.g. services: its curves are
// named by kube-proxy's mode or the CNI that replaces it.
type ServiceProxyLabeler interface {
	ServiceProxyLabel() bool
}

// Celler is implemented by scenarios that choose every point's cells; the
// suite gives the others its default cells (egress-filter's list).
type Celler interface {
	Cells(p Point) []Cell
}

// Needs is implemented by scenarios that need more of a deployment than
// the standard pods: extra pods (e.g. service backends on both nodes).
type Needs interface {
	Pods() []backend.Pod
}

// Target is where a cell's client runs and what it is pointed at: Args
// replace the suite's `--target SERVER` (e.g. `--service VIP:PORT`).
type Target struct {
	Client backend.Place
	Args   []string
}

// Targeter is implemented by prepared points whose cells do not go to the
// endpoint's server.
type Targeter interface {
	Target(c Cell) (Target, error)
}

// Checker is implemented by prepared points that prove every cell's path:
// BeginCell is called before the cell's client starts, the function it
// returns after it ended. Its metrics join the cell's repeat; an error
// fails the cell ("proof failed: …"), so a path that was not the one
// labelled is never reported as measured.
type Checker interface {
	BeginCell(c Cell) (end func() (map[string]float64, error), err error)
}

// Window is how long a cell measures: Warmup first (not measured), then
// Duration (the suite's --warmup and --duration).
type Window struct {
	Warmup, Duration time.Duration
}

// Measurer is implemented by prepared points whose cells are not the
// engine's (real applications' clients and servers, e.g. curl against
// nginx): the suite calls Measure instead of running `cnibench run`, and
// keeps everything else of the cell — the path evidence around it, the
// Checker's proof, the labels, the point's metrics and config, the record.
// The result has one repeat (or none and an error); its metrics are
// measured over exactly the window. A CPU-profiled cell (--cpu-profile) is
// refused ("cpu profile: …"): the suite's profiler wraps its own client
// only. Measure must stop everything it started when ctx ends.
type Measurer interface {
	Measure(ctx context.Context, c Cell, w Window) (*result.Result, error)
}

// Prepared is a point set up in the lab; the suite runs the cells against it
// and then closes it.
type Prepared interface {
	// Metrics are the set-up costs (times, memory) attached to every repeat
	// measured at this point.
	Metrics() map[string]float64
	// Config describes how it was set up (method, seed, …), recorded in the
	// runs' config.
	Config() map[string]string
	// Close undoes Prepare, also when ctx is cancelled, and returns its own
	// costs (tear-down time). It may be called more than once.
	Close(ctx context.Context) (map[string]float64, error)
}

// Scenario is a scenario the suite can run.
type Scenario interface {
	// Name is the scenario's name (--scenario, the scenario label).
	Name() string
	// Points lists every point in a fixed order, skipped ones included.
	Points() []Point
	// Prepare sets the point up in env. On error nothing of it is left
	// behind and the error says which step failed.
	Prepare(ctx context.Context, env Env, p Point) (Prepared, error)
	// Close releases what Prepare calls shared (e.g. extra addresses in
	// the lab); it may be called more than once.
	Close(ctx context.Context) error
}
