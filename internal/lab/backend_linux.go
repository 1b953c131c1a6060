package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/backend"
)

// Backend is the local lab as a backend.Backend: nodes and pods are
// network namespaces, servers and clients are processes of the run's
// Spawner (pinned CPUs, its cgroup, the run's token), one run per host
// (the suite lock).
type Backend struct {
	o        BackendOptions
	selected []string // the datapaths asked for (before the defaults)
	log      *slog.Logger

	mu        sync.Mutex
	events    backend.Events
	spawner   *Spawner
	clientCPU *unix.CPUSet // nil: not pinned
	serverCPU *unix.CPUSet
	scenario  bool // Up was asked for a scenario (its datapaths, no baseline, no variants)
	ran       []string
}

// NewBackend validates o and returns the lab backend.
func NewBackend(o BackendOptions) (*Backend, error) {
	if err := o.Validate(); err != nil {
		return nil, &backend.OptionError{Msg: err.Error()}
	}
	b := &Backend{selected: slices.Clone(o.Datapaths), o: o.withDefaults()}
	b.log = b.o.Logger
	if b.o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the cnibench binary: %w", err)
		}
		b.o.Binary = exe
	}
	return b, nil
}

// Name is BackendName.
func (b *Backend) Name() string { return BackendName }

// Config is the lab's part of the results' config.
func (b *Backend) Config() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.o
	if b.scenario {
		o.Datapaths, o.Conntrack, o.NoBaseline = b.ran, false, true
	}
	return o.config()
}

// Open takes the suite lock (one run per host), notes labs leaked by dead
// runs, warns about too few CPUs and starts the spawner every server and
// client of the run is forked from. close stops the spawner (killing
// anything still running) and releases the lock.
func (b *Backend) Open(ctx context.Context, ev backend.Events) (func(), error) {
	clientCPU, serverCPU, err := pinCPUs(b.o.Pin)
	if err != nil {
		return nil, &backend.OptionError{Msg: err.Error()}
	}
	release, err := acquireSuiteLock(b.o.LockPath)
	if err != nil {
		return nil, err
	}
	noteLeakedLabs(b.log, ev)
	if w := cpuWarning(runtime.NumCPU()); w != "" && ev.Warn != nil {
		ev.Warn(w)
	}
	if b.o.Pin == PinSame && ev.Progress != nil {
		ev.Progress("pin: servers and clients share one CPU (--pin same; --pin none lets the scheduler place them)")
	}
	sp, err := NewSpawner()
	if err != nil {
		release()
		return nil, err
	}
	if _, err := sp.Cgroup(); err != nil {
		b.log.Debug("children run without a cgroup of their own (the parent-death signal still ends them)", "reason", err)
	}
	b.mu.Lock()
	b.spawner, b.clientCPU, b.serverCPU, b.events = sp, clientCPU, serverCPU, ev
	b.mu.Unlock()
	return func() {
		// Servers and labs are down by then; this kills anything that is
		// not.
		sp.Close()
		release()
	}, nil
}

// noteLeakedLabs says when labs of dead runs are still on this machine (a
// suite killed with SIGKILL cannot remove its namespaces) and how to remove
// them. They cost no CPU, so the run goes on.
func noteLeakedLabs(log *slog.Logger, ev backend.Events) {
	runs, err := Status()
	if err != nil {
		log.Debug("lab status", "err", err)
	}
	for _, r := range runs {
		if !r.Leaked || ev.Warn == nil {
			continue
		}
		who := "a dead run"
		if r.State != nil {
			who = fmt.Sprintf("a dead run (pid %d)", r.State.PID)
		}
		ev.Warn(fmt.Sprintf("a leaked lab of %s is on this machine: run %s, %d namespace(s); remove it with 'cnibench lab down'",
			who, r.RunID, len(r.Namespaces)))
	}
}

// datapathsFor is what a spec deploys: a scenario's own datapath, the
// selected datapaths (veth-routing by default) for a scenario, or the
// matrix's with the conntrack variants on its first MTU.
func (b *Backend) datapathsFor(spec backend.Spec) ([]string, map[string]bool, error) {
	if sc := spec.Scenario; sc != nil {
		if sc.Datapath != "" {
			if len(b.selected) > 0 && !slices.Equal(b.selected, []string{sc.Datapath}) {
				return nil, nil, &backend.OptionError{Msg: fmt.Sprintf("--datapaths %s: scenario %s runs on its own topology (%s); drop --datapaths",
					strings.Join(b.selected, ","), sc.Name, sc.Datapath)}
			}
			return []string{sc.Datapath}, nil, nil
		}
		if len(b.selected) > 0 {
			return slices.Clone(b.selected), nil, nil
		}
		return []string{ScenarioDatapath}, nil, nil
	}
	dps := slices.Clone(b.o.Datapaths)
	variants := map[string]bool{}
	if !spec.Sweep && b.o.Conntrack && slices.Contains(spec.Tests, "tcp_crr") {
		for _, v := range scenarioVariants(dps, Names()) {
			dps = append(dps, v)
			variants[v] = true
		}
	}
	return dps, variants, nil
}

// Up builds one lab (one wire MTU) and starts a server per server pod.
func (b *Backend) Up(ctx context.Context, spec backend.Spec) (backend.Deployment, error) {
	b.mu.Lock()
	sp := b.spawner
	b.mu.Unlock()
	if sp == nil {
		return nil, errors.New("lab: Up before Open")
	}
	dps, variants, err := b.datapathsFor(spec)
	if err != nil {
		return nil, err
	}
	if spec.Scenario != nil {
		b.mu.Lock()
		b.scenario, b.ran = true, dps
		b.mu.Unlock()
	}
	l := New(b.log)
	d := &Deployment{b: b, l: l, spec: spec, names: dps, variants: variants, byPod: map[string]*backend.Process{}, paths: map[string][]backend.Path{}}
	what := ""
	if spec.Scenario != nil {
		what = " (scenario " + spec.Scenario.Name + ")"
	}
	d.progressf("lab: building %d datapath(s) with wire MTU %d, %s wire%s", len(dps), spec.MTU, b.o.Wire, what)
	lo := Options{Datapaths: dps, MTU: spec.MTU, Wire: b.o.Wire}
	if spec.Scenario != nil {
		for _, p := range spec.Scenario.Pods {
			lo.ExtraPods = append(lo.ExtraPods, PodSpec{Role: p.Role, Node: p.Node, IP: p.IP})
		}
	}
	if err := l.Up(ctx, lo); err != nil {
		return d, fmt.Errorf("bring the lab up (MTU %d): %w", spec.MTU, err)
	}
	for _, dp := range l.Datapaths() {
		_, topo, err := l.Datapath(dp)
		if err != nil {
			return d, err
		}
		eps := topo.Paths
		if spec.Scenario != nil {
			if spec.Scenario.Datapath != "" {
				// Its own topology: the scenario's prepared points give
				// every cell its client and target; no server of ours.
				continue
			}
			ep, ok := topo.Path(CrossNode)
			if !ok && spec.Scenario.AnyDatapath {
				return d, &backend.OptionError{Msg: fmt.Sprintf("--datapaths %s: scenario %s needs a datapath with pods (e.g. %s)",
					dp, spec.Scenario.Name, ScenarioDatapath)}
			}
			if !spec.Scenario.AnyDatapath && (!ok || ep.ClientNode == nil || ep.ClientNodeDev == "") {
				return d, &backend.OptionError{Msg: fmt.Sprintf("--datapaths %s: scenario %s works on the client pod's node and veth, which only the routed datapaths expose (e.g. %s)",
					dp, spec.Scenario.Name, ScenarioDatapath)}
			}
			eps = []Endpoint{ep}
		}
		for _, ep := range eps {
			// Paths may share a server pod.
			pod := ep.Server.Name + "/" + ep.ServerIP.String()
			s, ok := d.byPod[pod]
			addr := fmt.Sprintf("%s:%d", ep.ServerIP, ServePort)
			if !ok {
				if s, err = d.start(ctx, ep.Server, addr, nil, "serve", "--listen", addr); err != nil {
					return d, fmt.Errorf("start the server of %s/%s: %w", dp, ep.Kind, err)
				}
				d.byPod[pod] = s
			}
			d.paths[dp] = append(d.paths[dp], backend.Path{
				Kind: string(ep.Kind), Client: ep.Client, Target: addr,
				PathMTU: topo.PathMTU, PodMTU: topo.PodMTU, Wire: topo.Wire,
			})
		}
	}
	return d, nil
}

// Deployment is one lab (one wire MTU) with its servers.
type Deployment struct {
	b        *Backend
	l        *Lab
	spec     backend.Spec
	names    []string
	variants map[string]bool
	byPod    map[string]*backend.Process // one server per pod and address
	paths    map[string][]backend.Path
}

func (d *Deployment) progressf(format string, a ...any) {
	if d.b.events.Progress != nil {
		d.b.events.Progress(format, a...)
	}
}

// Datapaths describes the lab's datapaths, skipped ones with their reason;
// a conntrack variant runs the tcp_crr cross-node cells only.
func (d *Deployment) Datapaths() []backend.Datapath {
	skipped := d.l.Skipped()
	var out []backend.Datapath
	for _, name := range d.names {
		x := backend.Datapath{Name: name, Description: Describe(name)}
		if dp, topo, err := d.l.Datapath(name); err == nil {
			x.Description, x.PacketPath = dp.Description(), dp.PacketPath()
			x.Config = map[string]string{
				"expected_path_mtu": strconv.Itoa(topo.PathMTU),
				"pod_mtu":           strconv.Itoa(topo.PodMTU),
				"wire":              topo.Wire,
			}
		}
		if err, ok := skipped[name]; ok {
			x.Skipped = err.Error()
		}
		if d.variants[name] {
			x.OnlyTests, x.OnlyPaths = []string{"tcp_crr"}, []string{string(CrossNode)}
		}
		out = append(out, x)
	}
	return out
}

// Paths lists a datapath's paths with their servers.
func (d *Deployment) Paths(datapath string) []backend.Path { return d.paths[datapath] }

// Run runs a client at place (a lab namespace) on the clients' CPUs.
func (d *Deployment) Run(ctx context.Context, place backend.Place, args []string) ([]byte, []byte, error) {
	ns, ok := place.(*NS)
	if !ok {
		return nil, nil, fmt.Errorf("lab: cannot run at %v", place)
	}
	stdout, stderr, err := d.runClient(ctx, ns, args)
	return stdout.Bytes(), stderr.Bytes(), err
}

// Start starts a long-running `cnibench ARGS` in a lab namespace on the
// servers' CPUs (backend.Starter).
func (d *Deployment) Start(ctx context.Context, place backend.Place, stdin []byte, args []string) (*backend.Process, error) {
	ns, ok := place.(*NS)
	if !ok {
		return nil, fmt.Errorf("lab: cannot start a process at %v", place)
	}
	return d.start(ctx, ns, ns.Name, stdin, args...)
}

// Reset flushes the datapath's conntrack tables before a cell and returns
// its TIME_WAIT sockets (-1 if not counted).
func (d *Deployment) Reset(ctx context.Context, datapath string) (int, error) {
	_, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return -1, err
	}
	var errs []error
	if err := topo.ResetState(ctx); err != nil {
		errs = append(errs, fmt.Errorf("reset between cells failed (conntrack entries may carry over): %w", err))
	}
	tw, err := topo.TimeWait()
	if err != nil {
		tw = -1
		errs = append(errs, fmt.Errorf("TIME_WAIT sockets not counted: %w", err))
	}
	return tw, errors.Join(errs...)
}

// Evidence collects the datapath's path counters around one client run.
func (d *Deployment) Evidence(datapath string) backend.Evidence {
	dp, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return nil
	}
	return &labEvidence{datapath: datapath, ev: BeginEvidence(dp, topo)}
}

// LabAccess gives a scenario the datapath's topology (a scenario asks
// for it with scenario.Access and an interface of its own).
func (d *Deployment) LabAccess(datapath string) (*Access, error) {
	dp, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return nil, err
	}
	a := &Access{Topology: topo, Datapath: dp}
	if ep, ok := topo.Path(CrossNode); ok {
		a.Endpoint = ep
	} else if len(topo.Paths) > 0 {
		a.Endpoint = topo.Paths[0]
	}
	if cg, err := d.b.spawner.Cgroup(); err == nil {
		a.Cgroup = cg
	}
	return a, nil
}

// Labels: lab runs carry no backend label (results of earlier versions
// compare with new ones unchanged); the set's config says "backend: lab".
func (d *Deployment) Labels() map[string]string { return nil }

// Down stops the servers and removes the lab.
func (d *Deployment) Down(ctx context.Context) error {
	for _, s := range d.byPod {
		s.Stop()
	}
	return d.l.Down(ctx)
}

// labEvidence is the lab's path counters (backend.Evidence).
type labEvidence struct {
	datapath string
	ev       *Evidence
}

func (e *labEvidence) End() (map[string]float64, []string) { return e.ev.End() }

func (e *labEvidence) Check(path string, m map[string]float64) []string {
	return CheckPath(e.datapath, PathKind(path), m)
}

// pinCPUs returns the CPU sets of clients and servers for a --pin mode, from
// the CPUs this process may use: same puts both on the first, split puts
// clients on the first and servers on the second.
func pinCPUs(mode string) (client, server *unix.CPUSet, err error) {
	if mode == PinNone || mode == "" {
		return nil, nil, nil
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, nil, fmt.Errorf("--pin %s: read CPU affinity: %w", mode, err)
	}
	var cpus []int
	for i, seen := 0, 0; seen < allowed.Count() && len(cpus) < 2; i++ {
		if allowed.IsSet(i) {
			cpus = append(cpus, i)
			seen++
		}
	}
	one := func(c int) *unix.CPUSet {
		var s unix.CPUSet
		s.Set(c)
		return &s
	}
	switch mode {
	case PinSame:
		if len(cpus) < 1 {
			return nil, nil, fmt.Errorf("--pin same: no CPU available")
		}
		return one(cpus[0]), one(cpus[0]), nil
	case PinSplit:
		if len(cpus) < 2 {
			return nil, nil, fmt.Errorf("--pin split needs at least 2 CPUs, this process may use %d: use --pin same or none", len(cpus))
		}
		return one(cpus[0]), one(cpus[1]), nil
	}
	return nil, nil, fmt.Errorf("--pin %q: must be none, same or split", mode)
}
