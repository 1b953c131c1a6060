package suite

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/pkg/result"
)

// TimeWaitAtStart is the metric recording the TIME_WAIT sockets in a
// datapath's namespaces when a repeat starts: they cannot be flushed like
// conntrack entries (they last 60 s), so they are reported per cell.
const TimeWaitAtStart = "time_wait_at_start"

// labRun is one lab of the run (one per MTU) with its servers and cells.
type labRun struct {
	l       *lab.Lab
	mtu     int
	cells   []cell
	byPod   map[string]*server // one server per pod and address
	servers map[string]*server // datapath/path → its server
}

// close stops the lab's servers and tears the lab down.
func (lr *labRun) close(st *state) {
	for _, s := range lr.byPod {
		s.stop()
	}
	dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lr.l.Down(dctx); err != nil {
		st.log.Error("lab teardown failed; run 'cnibench lab down'", "err", err)
		st.mu.Lock()
		st.set.Warnings = append(st.set.Warnings, "lab teardown failed: "+err.Error())
		st.mu.Unlock()
	}
}

// runAll brings up one lab per MTU (all at once: idle namespaces and
// servers cost nothing), then runs every repeat over the cells of all labs
// in a seeded random order, each cell from a clean connection-tracking
// state. Whatever happens, every lab comes down.
func (st *state) runAll(ctx context.Context) error {
	labs := map[int]*labRun{}
	defer func() {
		for _, mtu := range st.o.MTUs {
			if lr := labs[mtu]; lr != nil {
				lr.close(st)
			}
		}
	}()
	var cells []cell
	for i, mtu := range st.o.MTUs {
		lr, err := st.bringUp(ctx, mtu, i == 0)
		if lr != nil {
			labs[mtu] = lr
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		cells = append(cells, lr.cells...)
	}
	st.mu.Lock()
	st.total = len(cells) * st.o.Repeat
	st.mu.Unlock()
	if len(cells) == 0 {
		st.progressf("lab: no datapath can run here")
		return nil
	}
	st.progressf("order: shuffled per repeat with seed %d (--seed %d replays it)", st.o.Seed, st.o.Seed)
	for rep, order := range schedule(cells, st.o.Repeat, st.o.Seed) {
		for _, c := range order {
			if ctx.Err() != nil {
				return nil
			}
			lr := labs[c.MTU]
			ep, err := lr.l.Endpoint(c.Datapath, lab.PathKind(c.Path))
			if err != nil {
				return err
			}
			dp, topo, err := lr.l.Datapath(c.Datapath)
			if err != nil {
				return err
			}
			c.timeWait = st.resetState(ctx, topo)
			st.measure(ctx, c, rep, ep, topo, dp, lr.servers[c.Datapath+"/"+c.Path])
		}
	}
	return nil
}

// resetState flushes the topology's conntrack tables before a cell and
// returns its TIME_WAIT sockets (-1 if unknown).
func (st *state) resetState(ctx context.Context, topo *lab.Topology) int {
	if topo == nil {
		return -1
	}
	if err := topo.ResetState(ctx); err != nil && ctx.Err() == nil {
		st.warnOnce("reset between cells failed (conntrack entries may carry over): " + err.Error())
	}
	tw, err := topo.TimeWait()
	if err != nil {
		st.warnOnce("TIME_WAIT sockets not counted: " + err.Error())
		return -1
	}
	return tw
}

// bringUp builds the lab of one MTU, starts its servers and lists its
// cells. The returned labRun (also on error) must be closed.
func (st *state) bringUp(ctx context.Context, mtu int, main bool) (*labRun, error) {
	l := lab.New(st.log)
	dps := st.datapathsFor(main)
	st.progressf("lab: building %d datapath(s) with wire MTU %d, %s wire", len(dps), mtu, st.o.Wire)
	if err := l.Up(ctx, lab.Options{Datapaths: dps, MTU: mtu, Wire: st.o.Wire}); err != nil {
		return nil, fmt.Errorf("bring the lab up (MTU %d): %w", mtu, err)
	}
	lr := &labRun{l: l, mtu: mtu, byPod: map[string]*server{}, servers: map[string]*server{}}
	st.recordDatapaths(l, dps)
	planned := st.plannedFor(main)
	for _, dp := range l.Datapaths() {
		_, topo, err := l.Datapath(dp)
		if err != nil {
			return lr, err
		}
		for _, ep := range topo.Paths {
			key := dp + "/" + string(ep.Kind)
			// Paths may share a server pod.
			pod := ep.Server.Name + "/" + ep.ServerIP.String()
			s, ok := lr.byPod[pod]
			if !ok {
				if s, err = st.startServer(ctx, ep); err != nil {
					return lr, fmt.Errorf("start the server of %s: %w", key, err)
				}
				lr.byPod[pod] = s
			}
			lr.servers[key] = s
			for _, tv := range st.o.testVariants(main) {
				if st.scenario[dp] && (tv[0] != engine.TCPCRR || ep.Kind != lab.CrossNode) {
					continue
				}
				f, _ := strconv.Atoi(tv[1])
				lr.cells = append(lr.cells, cell{Datapath: dp, Path: string(ep.Kind), Test: tv[0], Flows: f, MTU: mtu, timeWait: -1})
			}
		}
	}
	// Correct the ETA's plan for datapaths that turned out to be skipped.
	st.mu.Lock()
	for _, c := range lr.cells {
		st.rank[result.LabelKey(c.labels())] = len(st.rank)
	}
	st.total += len(lr.cells)*st.o.Repeat - planned
	st.mu.Unlock()
	return lr, nil
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
