package suite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/pkg/result"
)

// TimeWaitAtStart is the metric recording the TIME_WAIT sockets in a
// datapath's namespaces when a repeat starts: they cannot be flushed like
// conntrack entries (they last 60 s), so they are reported per cell.
const TimeWaitAtStart = "time_wait_at_start"

// depRun is one deployment of the run (one per MTU) with its cells.
type depRun struct {
	d     backend.Deployment
	mtu   int
	cells []cell
	paths map[string]backend.Path // datapath/path → its path
}

// close tears the deployment down (its servers with it).
func (dr *depRun) close(st *state) {
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := dr.d.Down(dctx); err != nil {
		hint := ""
		if st.backend.Name() == "lab" {
			hint = "; run 'cnibench lab down'"
		}
		st.log.Error("teardown failed"+hint, "backend", st.backend.Name(), "err", err)
		st.mu.Lock()
		st.set.Warnings = append(st.set.Warnings, st.backend.Name()+" teardown failed: "+err.Error())
		st.mu.Unlock()
	}
}

// runAll brings up one deployment per MTU (all at once: idle namespaces
// and servers cost nothing), then runs every repeat over the cells of all
// deployments in a seeded random order, each cell from a clean
// connection-tracking state where the backend can reset it. Whatever
// happens, every deployment comes down.
func (st *state) runAll(ctx context.Context) error {
	deps := map[int]*depRun{}
	defer func() {
		for _, mtu := range st.o.MTUs {
			if dr := deps[mtu]; dr != nil {
				dr.close(st)
			}
		}
	}()
	var cells []cell
	for i, mtu := range st.o.MTUs {
		dr, err := st.bringUp(ctx, mtu, i == 0)
		if dr != nil {
			deps[mtu] = dr
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		cells = append(cells, dr.cells...)
	}
	st.mu.Lock()
	st.total = len(cells) * st.o.Repeat
	st.mu.Unlock()
	if len(cells) == 0 {
		st.progressf("%s: no datapath can run here", st.backend.Name())
		return nil
	}
	st.progressf("order: shuffled per repeat with seed %d (--seed %d replays it)", st.o.Seed, st.o.Seed)
	for rep, order := range schedule(cells, st.o.Repeat, st.o.Seed) {
		for _, c := range order {
			if ctx.Err() != nil {
				return nil
			}
			dr := deps[c.MTU]
			p := dr.paths[c.Datapath+"/"+c.Path]
			c.timeWait = st.resetDeployment(ctx, dr.d, c.Datapath)
			d, dp := dr.d, c.Datapath
			st.measure(ctx, c, rep, clientRun{
				run: func(ctx context.Context, args []string) ([]byte, []byte, error) {
					return d.Run(ctx, p.Client, args)
				},
				target:   targetArgs(p, c.Test),
				evidence: func() backend.Evidence { return d.Evidence(dp) },
				check:    true,
				config:   pathConfig(p),
			})
		}
	}
	for _, mtu := range st.o.MTUs {
		if dr := deps[mtu]; dr != nil && ctx.Err() == nil {
			st.collectFindings(ctx, dr.d)
		}
	}
	return nil
}

// targetArgs are a path's target flags for a test (cells a path cannot
// carry were never made).
func targetArgs(p backend.Path, test string) []string {
	a, _ := p.TargetArgs(test)
	return a
}

// pathConfig is a path's part of a run's configuration.
func pathConfig(p backend.Path) map[string]string {
	m := map[string]string{"wire": p.Wire}
	if p.PathMTU > 0 {
		m["expected_path_mtu"] = strconv.Itoa(p.PathMTU)
	}
	if p.PodMTU > 0 {
		m["pod_mtu"] = strconv.Itoa(p.PodMTU)
	}
	return m
}

// collectFindings adds the checks of a deployment that has them (a
// cluster's MTU, policy, encryption, CNI and footprint) to the results.
func (st *state) collectFindings(ctx context.Context, d backend.Deployment) {
	f, ok := d.(backend.Finder)
	if !ok {
		return
	}
	st.progressf("%s: running checks", st.backend.Name())
	findings := f.Findings(ctx, st.measuredMetrics)
	st.mu.Lock()
	st.set.Findings = append(st.set.Findings, findings...)
	st.mu.Unlock()
	for _, x := range findings {
		st.progressf("check %s: %s: %s", x.Check, x.Verdict, x.Summary)
	}
	if err := st.flush(); err != nil {
		st.log.Error("write results", "err", err)
	}
}

// measuredMetrics returns the runs whose labels include match (for
// checks that price a finding with the matrix's figures): the set as last
// written, after every measurement.
func (st *state) measuredMetrics(match map[string]string) []result.Run {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.set.Find(match)
}

// resetDeployment resets a datapath's state before a cell and returns its
// TIME_WAIT sockets (-1 if unknown); failures are run-wide warnings.
func (st *state) resetDeployment(ctx context.Context, d backend.Deployment, datapath string) int {
	tw, err := d.Reset(ctx, datapath)
	st.warnReset(ctx, err)
	return tw
}

// warnReset makes a reset's failures run-wide warnings (once each).
func (st *state) warnReset(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	if errors.Is(err, backend.ErrNotSupported) {
		st.warnOnce(fmt.Sprintf("%s: connection-tracking state is not reset between cells: %v", st.backend.Name(), err))
		return
	}
	for _, e := range unwrapJoined(err) {
		st.warnOnce(e.Error())
	}
}

// unwrapJoined splits an errors.Join error into its parts.
func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// resetState resets a scenario's lab topology before a cell (see
// resetDeployment).
func (st *state) resetState(ctx context.Context, topo *lab.Topology) int {
	if topo == nil {
		return -1
	}
	tw, err := resetTopology(ctx, topo)
	st.warnReset(ctx, err)
	return tw
}

// bringUp brings the deployment of one MTU up (its servers listening)
// and lists its cells. The returned depRun (also on error) must be closed.
func (st *state) bringUp(ctx context.Context, mtu int, main bool) (*depRun, error) {
	dps := st.datapathsFor(main)
	d, err := st.backend.Up(ctx, backend.Spec{Datapaths: dps, MTU: mtu, Wire: st.o.Wire, Token: st.token})
	var dr *depRun
	if d != nil {
		dr = &depRun{d: d, mtu: mtu, paths: map[string]backend.Path{}}
	}
	if err != nil {
		return dr, err
	}
	st.recordDatapaths(d.Datapaths())
	extra := d.Labels()
	st.mu.Lock()
	for k, v := range extra {
		st.set.Config[k] = v
	}
	st.mu.Unlock()
	planned := st.plannedFor(main)
	for _, x := range d.Datapaths() {
		if x.Skipped != "" {
			continue
		}
		dp := x.Name
		for _, p := range d.Paths(dp) {
			dr.paths[dp+"/"+p.Kind] = p
			labels := maps.Clone(extra)
			if len(p.Labels) > 0 {
				if labels == nil {
					labels = map[string]string{}
				}
				maps.Copy(labels, p.Labels)
			}
			for _, tv := range st.o.testVariants(main) {
				if st.scenario[dp] && (tv[0] != engine.TCPCRR || p.Kind != string(lab.CrossNode)) {
					continue
				}
				f, _ := strconv.Atoi(tv[1])
				c := cell{Datapath: dp, Path: p.Kind, Test: tv[0], Flows: f, MTU: mtu, timeWait: -1, extra: labels}
				if _, why := p.TargetArgs(tv[0]); why != "" {
					st.mu.Lock()
					st.set.Skipped = append(st.set.Skipped, result.Skip{Labels: c.labels(), Reason: "skipped: " + why})
					st.mu.Unlock()
					continue
				}
				dr.cells = append(dr.cells, c)
			}
		}
	}
	// Correct the ETA's plan for datapaths that turned out to be skipped.
	st.mu.Lock()
	for _, c := range dr.cells {
		st.rank[result.LabelKey(c.labels())] = len(st.rank)
	}
	st.total += len(dr.cells)*st.o.Repeat - planned
	st.mu.Unlock()
	return dr, nil
}

// childEnv is the environment of the suite's servers and clients: this
// process's, plus the run's token.
func (st *state) childEnv() []string {
	return append(os.Environ(), engine.TokenEnv+"="+st.token)
}

// warnOnce adds a run-wide warning to the results and prints it once (as
// progress, not also as a log line).
func (st *state) warnOnce(w string) {
	st.mu.Lock()
	if slices.Contains(st.set.Warnings, w) {
		st.mu.Unlock()
		return
	}
	st.set.Warnings = append(st.set.Warnings, w)
	st.mu.Unlock()
	st.progressf("warning: %s", w)
}

// noteLeakedLabs says when labs of dead runs are still on this machine (a
// suite killed with SIGKILL cannot remove its namespaces) and how to remove
// them. They cost no CPU, so the run goes on.
func (st *state) noteLeakedLabs() {
	runs, err := lab.Status()
	if err != nil {
		st.log.Debug("lab status", "err", err)
	}
	for _, r := range runs {
		if !r.Leaked {
			continue
		}
		who := "a dead run"
		if r.State != nil {
			who = fmt.Sprintf("a dead run (pid %d)", r.State.PID)
		}
		st.warnOnce(fmt.Sprintf("a leaked lab of %s is on this machine: run %s, %d namespace(s); remove it with 'cnibench lab down'",
			who, r.RunID, len(r.Namespaces)))
	}
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

// warnCPUs warns when the processes of a cell must share CPUs.
func (st *state) warnCPUs() {
	if w := cpuWarning(runtime.NumCPU()); w != "" {
		st.warnOnce(w)
	}
	if st.o.Pin == PinSame {
		st.progressf("pin: servers and clients share one CPU (--pin same)")
	}
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
