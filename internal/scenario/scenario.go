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
	"log/slog"
	"strings"

	"github.com/cnibench/cnibench/internal/lab"
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

// Env is where a point is prepared: one endpoint of a lab (the client and
// server pods and, for the routed datapaths, the client's node).
type Env struct {
	Endpoint lab.Endpoint
	Topology *lab.Topology
	// Datapath is the lab datapath the point runs on (a scenario on its
	// own topology reaches its knobs through it).
	Datapath lab.Datapath
	Logger   *slog.Logger
	// Serve starts `cnibench serve ARGS` in ns with the run's token, the
	// way the suite starts its servers, and returns once it listens. Nil
	// outside the suite.
	Serve func(ctx context.Context, ns *lab.NS, args ...string) (*Server, error)
	// Start starts `cnibench ARGS` in ns (a long-running helper, e.g. a
	// userspace tunnel) the same way, with stdin (secrets stay off the
	// command line), and returns once the first line it writes to stderr
	// starts with "ready"; any other first line is the error. Nil outside
	// the suite.
	Start func(ctx context.Context, ns *lab.NS, stdin []byte, args ...string) (*Server, error)
	// Run runs one `cnibench run ARGS` client in ns as the suite runs its
	// cells (same cgroup, CPUs and token) and returns its result. Nil
	// outside the suite.
	Run func(ctx context.Context, ns *lab.NS, args ...string) (*result.Result, error)
	// Cgroup is the cgroup v2 directory every client and server the suite
	// starts runs in (where socket-level hooks attach); "" if none.
	Cgroup string
}

// Server is a `cnibench serve` started through Env.Serve.
type Server struct {
	// PID is the server's process id (its CPU time is in
	// /proc/PID/stat).
	PID int
	// Stop ends it (SIGTERM, then SIGKILL after 5 s) and waits for it.
	Stop func()
}

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

// Celler is implemented by scenarios that choose every point's cells; the
// suite gives the others its default cells (egress-filter's list).
type Celler interface {
	Cells(p Point) []Cell
}

// LabNeeds is implemented by scenarios that need more of the lab than the
// standard pods: extra pods (e.g. service backends on both nodes).
type LabNeeds interface {
	ExtraPods() []lab.PodSpec
}

// Target is where a cell's client runs and what it is pointed at: Args
// replace the suite's `--target SERVER` (e.g. `--service VIP:PORT`).
type Target struct {
	Client *lab.NS
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
