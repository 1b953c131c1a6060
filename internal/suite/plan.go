package suite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// TimeWaitAtStart is the metric recording the TIME_WAIT sockets in a
// datapath's namespaces when a repeat starts: they cannot be flushed like
// conntrack entries (they last 60 s), so they are reported per cell.
const TimeWaitAtStart = "time_wait_at_start"

// crossNode is the path a scenario's cells take unless a cell names its
// own.
const crossNode = "cross-node"

// depRun is one deployment of the run: one per MTU for the matrix, one
// for a scenario.
type depRun struct {
	d     backend.Deployment
	dps   []backend.Datapath // d.Datapaths()
	mtu   int
	extra map[string]string       // the deployment's labels (cluster, nodes, …)
	paths map[string]backend.Path // datapath/path → its path
}

// path returns a datapath's path of a kind.
func (dr *depRun) path(datapath, kind string) (backend.Path, bool) {
	p, ok := dr.paths[datapath+"/"+kind]
	return p, ok
}

// close tears the deployment down (its servers with it).
func (dr *depRun) close(st *state) {
	// Bounded, and longer than a backend's own wait (the cluster's
	// DownTimeout), so that the backend says what is left, not "deadline".
	dctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
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

// point is one unit of the plan, prepared once per repeat: a scenario's
// point on one datapath, or the whole matrix (one point whose cells span
// every deployment and datapath).
type point struct {
	sp       scenario.Point // zero for the matrix
	dep      *depRun        // the scenario's deployment; nil for the matrix
	datapath string
	cells    []cell
	// skipped is set once the point was recorded as unable to run on this
	// backend (its later repeats are not tried).
	skipped bool
	// esc is its place in an escalating series (nil: none; escalate.go),
	// attempts how many times it was prepared.
	esc      *escPoint
	attempts int
}

// bringUp brings one deployment up (its servers listening) and records
// its datapaths and labels. The returned depRun (also on error) must be
// closed.
func (st *state) bringUp(ctx context.Context, spec backend.Spec) (*depRun, error) {
	spec.Token, spec.Tests = st.token, st.o.Tests
	d, err := st.backend.Up(ctx, spec)
	var dr *depRun
	if d != nil {
		dr = &depRun{d: d, mtu: spec.MTU, paths: map[string]backend.Path{}}
	}
	if err != nil {
		return dr, err
	}
	dr.dps = d.Datapaths()
	st.recordDatapaths(dr.dps)
	dr.extra = d.Labels()
	st.mu.Lock()
	maps.Copy(st.set.Config, dr.extra)
	st.mu.Unlock()
	for _, x := range dr.dps {
		if x.Skipped != "" {
			continue
		}
		for _, p := range d.Paths(x.Name) {
			dr.paths[x.Name+"/"+p.Kind] = p
		}
	}
	return dr, nil
}

// matrixCells lists a deployment's cells of the matrix: datapath × path ×
// test × flows (only the MTU-sensitive subset on a sweep's further MTUs);
// a cell a path cannot carry is recorded skipped.
func (st *state) matrixCells(dr *depRun, sweep bool) []cell {
	var out []cell
	for _, x := range dr.dps {
		if x.Skipped != "" {
			continue
		}
		for _, p := range dr.d.Paths(x.Name) {
			labels := maps.Clone(dr.extra)
			if len(p.Labels) > 0 {
				if labels == nil {
					labels = map[string]string{}
				}
				maps.Copy(labels, p.Labels)
			}
			if x.OnlyPaths != nil && !slices.Contains(x.OnlyPaths, p.Kind) || !st.o.keepPath(p.Kind) {
				continue
			}
			for _, tv := range st.o.testVariants(!sweep) {
				if x.OnlyTests != nil && !slices.Contains(x.OnlyTests, tv[0]) {
					continue
				}
				f, _ := strconv.Atoi(tv[1])
				c := cell{Datapath: x.Name, Path: p.Kind, Test: tv[0], Flows: f, MTU: dr.mtu, timeWait: -1, extra: labels, dep: dr}
				if _, why := p.TargetArgs(tv[0]); why != "" {
					st.skip(c.labels(), "skipped: "+why)
					continue
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// planMatrix brings one deployment per MTU up (all at once: idle
// namespaces and servers cost nothing) and returns the matrix as one point.
// Every deployment brought up, also on error, is in *deps.
func (st *state) planMatrix(ctx context.Context, deps *[]*depRun) ([]*point, error) {
	var cells []cell
	for i, mtu := range st.o.MTUs {
		dr, err := st.bringUp(ctx, backend.Spec{MTU: mtu, Sweep: i > 0})
		if dr != nil {
			*deps = append(*deps, dr)
		}
		if err != nil || ctx.Err() != nil {
			return nil, err
		}
		cells = append(cells, st.matrixCells(dr, i > 0)...)
	}
	if len(cells) == 0 {
		st.progressf("%s: no datapath can run here", st.backend.Name())
		return nil, nil
	}
	return []*point{{cells: cells}}, nil
}

// planScenario brings the scenario's deployment up and returns its
// points: every runnable point of the scenario on every datapath that
// runs (datapath, then point: results.json's order). Points the scenario
// cannot run here are recorded with their reason.
func (st *state) planScenario(ctx context.Context, deps *[]*depRun) ([]*point, error) {
	sc := st.sc
	var run []scenario.Point
	for _, p := range sc.Points() {
		if reason := p.SkipReason(); reason != "" {
			st.skip(maps.Clone(p.Labels), reason)
			st.progressf("%s: %s", pointString(p), reason)
			continue
		}
		run = append(run, p)
	}
	spec := &backend.ScenarioSpec{Name: sc.Name()}
	if own, ok := sc.(scenario.OwnDatapath); ok {
		spec.Datapath = own.Datapath()
	}
	if n, ok := sc.(scenario.Needs); ok {
		spec.Pods = n.Pods()
	}
	if a, ok := sc.(scenario.AnyDatapath); ok {
		spec.AnyDatapath = a.AnyDatapath()
	}
	if l, ok := sc.(scenario.ServiceProxyLabeler); ok {
		spec.ServiceProxy = l.ServiceProxyLabel()
	}
	dr, err := st.bringUp(ctx, backend.Spec{MTU: st.o.MTUs[0], Scenario: spec})
	if dr != nil {
		*deps = append(*deps, dr)
	}
	if err != nil || ctx.Err() != nil {
		return nil, err
	}
	var points []*point
	for _, x := range dr.dps {
		if x.Skipped != "" {
			continue
		}
		for _, p := range run {
			points = append(points, &point{sp: p, dep: dr, datapath: x.Name, cells: scenarioCells(sc, p, x.Name, dr)})
		}
	}
	if len(points) == 0 {
		st.progressf("scenario %s: nothing can run here", sc.Name())
	}
	return points, nil
}

// scenarioCells are the cells of one point on a datapath (the cross-node
// path unless the cell names its own).
func scenarioCells(sc scenario.Scenario, p scenario.Point, datapath string, dr *depRun) []cell {
	var out []cell
	mtu := 0
	var extra map[string]string
	if dr != nil {
		mtu, extra = dr.mtu, dr.extra
	}
	for _, t := range cellsOf(sc, p) {
		labels := maps.Clone(p.Labels)
		maps.Copy(labels, t.Labels)
		path := t.Path
		if path == "" {
			path = crossNode
		}
		flows := max(t.Flows, 1)
		out = append(out, cell{Datapath: datapath, Path: path, Test: t.Test, Flows: flows, MTU: mtu,
			timeWait: -1, extra: maps.Clone(extra), dep: dr, sc: &scenarioCell{labels: labels, rate: t.Rate, cell: t}})
	}
	return out
}

// run plans the run, brings the backend up, runs every repeat of the plan
// and collects the backend's checks. Whatever happens, every deployment
// comes down.
func (st *state) run(ctx context.Context) error {
	var deps []*depRun
	defer func() {
		for _, dr := range deps {
			dr.close(st)
		}
	}()
	if st.sc != nil {
		defer func() {
			if err := st.sc.Close(context.WithoutCancel(ctx)); err != nil {
				st.warnOnce("scenario clean-up failed: " + err.Error())
			}
		}()
	}
	plan := st.planMatrix
	if st.sc != nil {
		plan = st.planScenario
	}
	points, err := plan(ctx, &deps)
	// The backend's config as it was deployed (a scenario's datapaths).
	st.mu.Lock()
	maps.Copy(st.set.Config, st.backend.Config())
	st.mu.Unlock()
	if err != nil || ctx.Err() != nil || len(points) == 0 {
		return err
	}
	st.markProfiled(points)
	if st.sc != nil {
		markEscalation(st.sc, points)
	}
	st.mu.Lock()
	st.total = 0
	for _, pt := range points {
		for _, c := range pt.cells {
			st.rank[result.LabelKey(c.labels())] = len(st.rank)
			st.total += st.o.Repeat
		}
	}
	st.mu.Unlock()
	st.probeIdle(ctx)
	st.loop(ctx, points)
	st.rerunBusy(ctx, points)
	st.judgeTrust()
	st.finishProfiles(points)
	if st.sc == nil {
		for _, dr := range deps {
			if ctx.Err() == nil {
				st.collectFindings(ctx, dr.d)
			}
		}
	}
	return nil
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

// String of a cell in progress lines.
func (c cell) String() string {
	if c.sc != nil {
		return c.scenarioString()
	}
	return fmt.Sprintf("%s %s %s ×%d mtu %d", c.Datapath, c.Path, c.Test, c.Flows, c.MTU)
}
