package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// loop is the one run loop: for every repeat, the plan's points in a
// seeded shuffled order, each prepared (a scenario's point), its cells run
// in their shuffled order through the deployment, and closed.
func (st *state) loop(ctx context.Context, points []*point) {
	st.progressf("order: shuffled per repeat with seed %d (--seed %d replays it)", st.o.Seed, st.o.Seed)
	cells := make([][]cell, len(points))
	for i, pt := range points {
		cells[i] = pt.cells
	}
	for rep, steps := range schedule(cells, st.o.Repeat, st.o.Seed) {
		ascending(steps, points)
		for _, s := range steps {
			if ctx.Err() != nil {
				return
			}
			st.runPoint(ctx, points[s.point], s.cells, rep, points)
		}
	}
}

// runPoint prepares one point (a scenario's), runs its cells and closes
// it. A failed Prepare is recorded as the failure of every cell of the
// point; a point the backend cannot prepare (backend.ErrNotSupported, e.g.
// one that needs the lab) is recorded skipped once. A failure's evidence
// and the escalating series it stops are pointFailed's (all: the plan's
// points).
func (st *state) runPoint(ctx context.Context, pt *point, cells []cell, rep int, all []*point) {
	if pt.skipped {
		return
	}
	var prep scenario.Prepared
	if st.sc != nil {
		t0 := time.Now()
		var err error
		pt.attempts++
		prep, err = st.sc.Prepare(ctx, st.env(pt), pt.sp)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, backend.ErrNotSupported) {
				st.skipPoint(pt, "skipped: "+err.Error())
				return
			}
			if errors.Is(err, scenario.ErrTooLarge) {
				st.skipPoint(pt, scenario.Point{Skip: err}.SkipReason())
				return
			}
			if errors.Is(err, scenario.ErrNotEnforced) {
				// Accepted but not enforced: a finding about the backend,
				// with its evidence; no traffic is measured through a
				// filter that is not there.
				st.skipPoint(pt, "not enforced: "+firstLine(err.Error()))
				st.pointFailed(pt, all, rep, err, "not-enforced")
				return
			}
			msg := "prepare failed: " + err.Error()
			st.progressf("%s: %s", pointString(pt.sp), msg)
			for _, c := range cells {
				st.record(c, rep, nil, msg, time.Since(t0))
			}
			st.pointFailed(pt, all, rep, err, "failed")
			return
		}
		st.progressf("%s: prepared in %.2fs %s", pointString(pt.sp), time.Since(t0).Seconds(), formatMetrics(prep.Metrics()))
	}
	var measured []string
	for _, c := range cells {
		if ctx.Err() != nil {
			break
		}
		if c.sc != nil {
			c.sc.metrics, c.sc.config, c.sc.prep = prep.Metrics(), prep.Config(), prep
		}
		key := result.LabelKey(c.labels())
		before := st.repeatsOf(key)
		c.timeWait = st.reset(ctx, c.dep.d, c.Datapath)
		st.measure(ctx, c, rep)
		if st.repeatsOf(key) > before {
			measured = append(measured, key)
		}
	}
	if prep == nil {
		return
	}
	m, err := prep.Close(context.WithoutCancel(ctx))
	if err != nil {
		st.warnOnce(fmt.Sprintf("%s: %v", pointString(pt.sp), err))
		return
	}
	st.addToLastRepeat(measured, m)
}

// skipPoint records every cell of a point as skipped with reason, once,
// and takes its repeats out of the ETA.
func (st *state) skipPoint(pt *point, reason string) {
	pt.skipped = true
	st.skip(pointLabels(pt), reason)
	st.mu.Lock()
	st.total -= len(pt.cells) * st.o.Repeat
	st.mu.Unlock()
	st.progressf("%s on %s: %s", pointString(pt.sp), pt.datapath, reason)
}

// pointLabels are the labels a point's cells share (the point's, the
// datapath, the deployment's).
func pointLabels(pt *point) map[string]string {
	l := maps.Clone(pt.sp.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l["datapath"] = pt.datapath
	if pt.dep != nil {
		maps.Copy(l, pt.dep.extra)
	}
	return l
}

// env is where a scenario's point is prepared: its deployment, datapath
// and cross-node path, and places to start processes and run clients.
func (st *state) env(pt *point) scenario.Env {
	d := pt.dep.d
	env := scenario.Env{Deployment: d, Datapath: pt.datapath, Logger: st.log,
		Run: func(ctx context.Context, place backend.Place, args ...string) (*result.Result, error) {
			return clientResult(d.Run(ctx, place, args))
		}}
	if p, ok := pt.dep.path(pt.datapath, crossNode); ok {
		env.Path = p
	}
	if s, ok := d.(backend.Starter); ok {
		env.Start = func(ctx context.Context, place backend.Place, stdin []byte, args ...string) (*scenario.Server, error) {
			return s.Start(ctx, place, stdin, args)
		}
		env.Serve = func(ctx context.Context, place backend.Place, args ...string) (*scenario.Server, error) {
			return s.Start(ctx, place, nil, append([]string{"serve"}, args...))
		}
	}
	return env
}

// reset resets a datapath's state before a cell and returns its TIME_WAIT
// sockets (-1 if unknown); failures are run-wide warnings.
func (st *state) reset(ctx context.Context, d backend.Deployment, datapath string) int {
	tw, err := d.Reset(ctx, datapath)
	if err == nil || ctx.Err() != nil {
		return tw
	}
	if errors.Is(err, backend.ErrNotSupported) {
		st.warnOnce(fmt.Sprintf("%s: connection-tracking state is not reset between cells: %v", st.backend.Name(), err))
		return tw
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			st.warnOnce(e.Error())
		}
	} else {
		st.warnOnce(err.Error())
	}
	return tw
}

// clientRun is where and how one cell's client runs.
type clientRun struct {
	place  backend.Place
	target []string
	// evidence: collect the path counters around the client's run;
	// check: apply their path check (off when a scenario proves its own
	// path).
	evidence, check bool
	config          map[string]string
}

// client decides where a cell's client runs and what it targets: the
// scenario's Targeter, or the deployment's path of the cell's kind.
func (st *state) client(c cell) (clientRun, error) {
	var cr clientRun
	p, hasPath := c.dep.path(c.Datapath, c.Path)
	if !hasPath && c.Path != crossNode {
		p, hasPath = c.dep.path(c.Datapath, crossNode)
	}
	cr.config = maps.Clone(c.dep.datapathConfig(c.Datapath))
	if hasPath {
		cr.place = p.Client
		cr.target, _ = p.TargetArgs(c.Test)
		if cr.config == nil {
			cr.config = map[string]string{}
		}
		maps.Copy(cr.config, pathConfig(p))
	}
	cr.evidence, cr.check = true, true
	if c.sc == nil {
		return cr, nil
	}
	if tg, ok := c.sc.prep.(scenario.Targeter); ok {
		t, err := tg.Target(c.sc.cell)
		if err != nil {
			return cr, err
		}
		cr.place, cr.target = t.Client, t.Args
	}
	if _, checker := c.sc.prep.(scenario.Checker); checker {
		// The scenario proves its own path (e.g. a socket-LB hairpin never
		// leaves the pod, so the backend's claims about node forwarding do
		// not apply); a topology of its own has no paths to collect.
		cr.check = false
		cr.evidence = len(c.dep.d.Paths(c.Datapath)) > 0
	}
	return cr, nil
}

// measure runs one repeat of a cell's client and records it.
func (st *state) measure(ctx context.Context, c cell, rep int) {
	cr, err := st.client(c)
	if err != nil {
		st.record(c, rep, nil, "no client target: "+err.Error(), 0)
		return
	}
	var check func() (map[string]float64, error)
	if c.sc != nil {
		if ck, ok := c.sc.prep.(scenario.Checker); ok {
			end, err := ck.BeginCell(c.sc.cell)
			if err != nil {
				st.record(c, rep, nil, "proof failed: "+err.Error(), 0)
				return
			}
			check = end
		}
	}
	var ms scenario.Measurer
	if c.sc != nil {
		ms, _ = c.sc.prep.(scenario.Measurer)
	}
	switch {
	case ms != nil && c.profiled:
		st.record(c, rep, nil, "cpu profile: not supported for this scenario's cells (their clients are not cnibench run); run it without --cpu-profile", 0)
		return
	case ms == nil && cr.place == nil:
		st.record(c, rep, nil, "no client target: the scenario gave none", 0)
		return
	}
	profFile := ""
	if c.profiled {
		profFile = st.profileFile(c, rep)
	}
	run := func() (*result.Result, error) {
		if ms != nil {
			r, err := ms.Measure(ctx, c.sc.cell, scenario.Window{Warmup: st.o.Warmup, Duration: st.o.Duration})
			if err != nil {
				return nil, fmt.Errorf("client failed: %s", firstLine(err.Error()))
			}
			return r, nil
		}
		args := append(append([]string{"run"}, cr.target...), "--test", c.Test,
			"--flows", strconv.Itoa(c.Flows), "--duration", st.o.Duration.String(),
			"--warmup", st.o.Warmup.String(), "--repeat", "1", "--format", "json", "-q")
		if c.sc != nil && c.sc.rate != "" {
			args = append(args, "--rate", c.sc.rate)
		}
		if c.profiled {
			return clientResult(c.dep.d.(backend.CPUProfiler).RunProfiled(ctx, cr.place, args, profFile, st.o.CPUProfile.hz()))
		}
		return clientResult(c.dep.d.Run(ctx, cr.place, args))
	}

	var ev backend.Evidence
	if cr.evidence {
		ev = c.dep.d.Evidence(c.Datapath)
	}
	t0 := time.Now()
	r, err := run()
	el := time.Since(t0)
	var evidence map[string]float64
	var evWarnings []string
	if ev != nil {
		evidence, evWarnings = ev.End()
	}
	var proof map[string]float64
	var proofErr error
	if check != nil {
		proof, proofErr = check()
	}
	if err == nil && r == nil {
		err = errors.New("client failed: the scenario's measurement returned no result")
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		st.record(c, rep, nil, err.Error(), el)
		return
	}
	res := *r
	if proofErr != nil {
		if ctx.Err() != nil {
			return
		}
		st.record(c, rep, nil, "proof failed: "+firstLine(proofErr.Error()), el)
		return
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics == nil && len(proof) > 0 {
		// A failed repeat keeps the proof's counters: they explain it
		// (summaries skip failed repeats).
		res.Repeats[0].Metrics = map[string]float64{}
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics != nil {
		m := res.Repeats[0].Metrics
		maps.Copy(m, evidence)
		maps.Copy(m, proof)
		res.Warnings = append(res.Warnings, evWarnings...)
		if ev != nil && cr.check {
			res.Warnings = append(res.Warnings, ev.Check(c.Path, m)...)
		}
	}
	if profFile != "" {
		st.profiledRepeat(c, &res, profFile)
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics != nil && c.timeWait >= 0 {
		res.Repeats[0].Metrics[TimeWaitAtStart] = float64(c.timeWait)
	}
	if res.Config == nil {
		res.Config = map[string]string{}
	}
	maps.Copy(res.Config, cr.config)
	c.sc.apply(c, &res)
	st.record(c, rep, &res, "", el)
}

// clientResult decodes a `cnibench run --format json` client's result, or
// says why it has none ("client failed: " and its first line of stderr,
// else its exit error).
func clientResult(stdout, stderr []byte, err error) (*result.Result, error) {
	var res result.Result
	if jerr := json.Unmarshal(stdout, &res); jerr != nil || res.Schema != result.SchemaResult {
		msg := strings.TrimSpace(string(stderr))
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return nil, fmt.Errorf("client failed: %s", firstLine(msg))
	}
	return &res, nil
}

// datapathConfig is a datapath's part of its runs' configuration.
func (dr *depRun) datapathConfig(datapath string) map[string]string {
	for _, x := range dr.dps {
		if x.Name == datapath {
			return x.Config
		}
	}
	return nil
}
