package suite

import (
	"context"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// scenarioLab is the lab a scenario runs on: one datapath's cross-node path
// with its server.
type scenarioLab struct {
	l    *lab.Lab
	name string
	ep   lab.Endpoint
	dp   lab.Datapath
	topo *lab.Topology
	srv  *server
}

// runScenario runs --scenario: the lab with the selected datapaths (each
// must expose the client's node), then for every repeat every runnable
// point of the scenario in a seeded shuffled order: Prepare, the point's
// cells (in shuffled order, each from flushed conntrack tables), Close.
// Skipped points are recorded. Whatever happens, everything is closed and
// the lab comes down.
func (st *state) runScenario(ctx context.Context) error {
	sc, err := st.o.newScenario()
	if err != nil {
		return &ValidationError{err.Error()}
	}
	defer func() {
		if err := sc.Close(context.WithoutCancel(ctx)); err != nil {
			st.warnOnce("scenario clean-up failed: " + err.Error())
		}
	}()
	points := sc.Points()
	var run []scenario.Point
	for _, p := range points {
		if reason := p.SkipReason(); reason != "" {
			st.mu.Lock()
			st.set.Skipped = append(st.set.Skipped, result.Skip{Labels: maps.Clone(p.Labels), Reason: reason})
			st.mu.Unlock()
			st.progressf("%s: %s", pointString(p), reason)
			continue
		}
		run = append(run, p)
	}

	mtu := st.o.MTUs[0]
	l := lab.New(st.log)
	st.progressf("lab: building %d datapath(s) with wire MTU %d, %s wire (scenario %s)", len(st.o.Datapaths), mtu, st.o.Wire, sc.Name())
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Down(dctx); err != nil {
			st.log.Error("lab teardown failed; run 'cnibench lab down'", "err", err)
			st.warnOnce("lab teardown failed: " + err.Error())
		}
	}()
	lo := lab.Options{Datapaths: st.o.Datapaths, MTU: mtu, Wire: st.o.Wire}
	if n, ok := sc.(scenario.LabNeeds); ok {
		lo.ExtraPods = n.ExtraPods()
	}
	if err := l.Up(ctx, lo); err != nil {
		return fmt.Errorf("bring the lab up (MTU %d): %w", mtu, err)
	}
	st.recordDatapaths(labDatapaths(l, st.o.Datapaths))
	var labs []*scenarioLab
	for _, name := range l.Datapaths() {
		dp, topo, err := l.Datapath(name)
		if err != nil {
			return err
		}
		if _, own := sc.(scenario.OwnDatapath); own {
			// Its own topology: the prepared points give every cell its
			// client and target; no server of the suite's.
			var ep lab.Endpoint
			if len(topo.Paths) > 0 {
				ep = topo.Paths[0]
			}
			labs = append(labs, &scenarioLab{l: l, name: name, ep: ep, dp: dp, topo: topo})
			continue
		}
		ep, ok := topo.Path(lab.CrossNode)
		if !ok || ep.ClientNode == nil || ep.ClientNodeDev == "" {
			return &ValidationError{fmt.Sprintf("--datapaths %s: scenario %s works on the client pod's node and veth, which only the routed datapaths expose (e.g. %s)", name, sc.Name(), ScenarioDatapath)}
		}
		srv, err := st.startServer(ctx, ep)
		if err != nil {
			return fmt.Errorf("start the server of %s/%s: %w", name, lab.CrossNode, err)
		}
		servers = append(servers, srv)
		labs = append(labs, &scenarioLab{l: l, name: name, ep: ep, dp: dp, topo: topo, srv: srv})
	}

	// Matrix order for results.json: datapath, then point, then cell.
	st.mu.Lock()
	st.total = 0
	for _, sl := range labs {
		for _, p := range run {
			for _, c := range scenarioCells(sc, p, sl.name, mtu) {
				st.rank[result.LabelKey(c.labels())] = len(st.rank)
				st.total += st.o.Repeat
			}
		}
	}
	st.mu.Unlock()
	if len(labs) == 0 || len(run) == 0 {
		st.progressf("scenario %s: nothing can run here", sc.Name())
		return nil
	}

	st.progressf("order: shuffled per repeat with seed %d (--seed %d replays it)", st.o.Seed, st.o.Seed)
	type job struct {
		sl *scenarioLab
		p  scenario.Point
	}
	var jobs []job
	for _, sl := range labs {
		for _, p := range run {
			jobs = append(jobs, job{sl, p})
		}
	}
	rng := mrand.New(mrand.NewPCG(st.o.Seed, st.o.Seed^0x9e3779b97f4a7c15))
	for rep := range st.o.Repeat {
		order := slices.Clone(jobs)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, j := range order {
			if ctx.Err() != nil {
				return nil
			}
			cells := scenarioCells(sc, j.p, j.sl.name, mtu)
			rng.Shuffle(len(cells), func(a, b int) { cells[a], cells[b] = cells[b], cells[a] })
			st.runPoint(ctx, sc, j.sl, j.p, cells, rep)
		}
	}
	return nil
}

// runPoint prepares one point, runs its cells and closes it. A failed
// Prepare is recorded as the failure of every cell of the point.
func (st *state) runPoint(ctx context.Context, sc scenario.Scenario, sl *scenarioLab, p scenario.Point, cells []cell, rep int) {
	t0 := time.Now()
	env := scenario.Env{Endpoint: sl.ep, Topology: sl.topo, Datapath: sl.dp, Logger: st.log, Serve: st.serveIn, Start: st.startIn, Run: st.runClient}
	if cg, err := st.spawner.Cgroup(); err == nil {
		env.Cgroup = cg
	}
	prep, err := sc.Prepare(ctx, env, p)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		msg := "prepare failed: " + err.Error()
		st.progressf("%s: %s", pointString(p), msg)
		for _, c := range cells {
			st.record(c, rep, nil, msg, time.Since(t0))
		}
		return
	}
	st.progressf("%s: prepared in %.2fs %s", pointString(p), time.Since(t0).Seconds(), formatMetrics(prep.Metrics()))
	var measured []string
	for _, c := range cells {
		if ctx.Err() != nil {
			break
		}
		c.sc.metrics, c.sc.config, c.sc.prep = prep.Metrics(), prep.Config(), prep
		key := result.LabelKey(c.labels())
		before := st.repeatsOf(key)
		c.timeWait = st.resetState(ctx, sl.topo)
		st.measureScenario(ctx, c, rep, sl)
		if st.repeatsOf(key) > before {
			measured = append(measured, key)
		}
	}
	m, err := prep.Close(context.WithoutCancel(ctx))
	if err != nil {
		st.warnOnce(fmt.Sprintf("%s: %v", pointString(p), err))
		return
	}
	st.addToLastRepeat(measured, m)
}

// repeatsOf is the number of repeats recorded for a run key.
func (st *state) repeatsOf(key string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	if r := st.runs[key]; r != nil {
		return len(r.Repeats)
	}
	return 0
}

// addToLastRepeat adds metrics measured after a point's cells (tear-down)
// to the last repeat of each of its runs, and rewrites results.json.
func (st *state) addToLastRepeat(keys []string, m map[string]float64) {
	if len(m) == 0 || len(keys) == 0 {
		return
	}
	st.mu.Lock()
	for _, k := range keys {
		r := st.runs[k]
		if r == nil || len(r.Repeats) == 0 {
			continue
		}
		last := &r.Repeats[len(r.Repeats)-1]
		if last.Metrics == nil {
			continue
		}
		maps.Copy(last.Metrics, m)
		r.Summary = result.SummarizeRepeats(r.Repeats)
	}
	st.mu.Unlock()
	if err := st.flush(); err != nil {
		st.log.Error("write results", "err", err)
	}
}

func pointString(p scenario.Point) string {
	var s string
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		if k == scenario.LabelScenario {
			continue
		}
		if s != "" {
			s += " "
		}
		s += k + "=" + p.Labels[k]
	}
	return p.Labels[scenario.LabelScenario] + " " + s
}

func formatMetrics(m map[string]float64) string {
	var s string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += " " + k + "=" + result.Format(k, m[k])
	}
	return "(" + s[min(1, len(s)):] + ")"
}
