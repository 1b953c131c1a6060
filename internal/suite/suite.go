package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// Runner runs a suite.
type Runner struct {
	Logger *slog.Logger
	// Progress receives one line per measurement (and ETA).
	Progress io.Writer
}

// Outcome is what a suite run produced.
type Outcome struct {
	Set         *result.Set
	ResultsPath string
}

// Run runs the suite: it plans points × cells (the matrix is one point, a
// scenario has one per datapath and parameter set), brings the backend up,
// and runs every repeat's shuffled points and cells through
// backend.Deployment (run.go). The results measured so far are written to
// OutDir/results.json after every measurement; on cancellation everything
// comes down and Run returns the partial Outcome with ctx's error.
func (r *Runner) Run(ctx context.Context, o Options) (*Outcome, error) {
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Seed == 0 {
		seed, err := newSeed()
		if err != nil {
			return nil, err
		}
		o.Seed = seed
	}
	// Built once the seed is known: it is the scenario's too.
	sc, err := o.newScenario()
	if err != nil {
		return nil, &ValidationError{err.Error()}
	}
	if sc != nil {
		o = o.withScenarioDefaults(sc)
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	// Where the results and profiles go is checked before any work.
	if err := checkOutDir(o); err != nil {
		return nil, err
	}
	st := &state{r: r, o: o, log: log, backend: o.Backend, token: token, sc: sc,
		runs: map[string]*result.Run{}, rank: map[string]int{}}
	if op, ok := o.Backend.(backend.Opener); ok {
		closeBackend, err := op.Open(ctx, backend.Events{Progress: st.progressf, Warn: st.warnOnce})
		if err != nil {
			return nil, optionError(err)
		}
		defer closeBackend()
	}
	st.out = &Outcome{ResultsPath: filepath.Join(o.OutDir, "results.json")}
	st.set = &result.Set{
		Schema: result.SchemaResults,
		Tool:   buildinfo.Tool(),
		Start:  time.Now().UTC(),
		Host:   hostinfo.Collect(),
		Config: o.configMap(sc),
	}
	st.set.Config["backend"] = o.Backend.Name()
	var noShape string
	st.set.Shape, noShape = scenarioShape(sc)
	// Warnings raised while the backend opened (before the set existed).
	st.set.Warnings = append(st.set.Warnings, st.early...)
	if noShape != "" {
		st.set.Warnings = append(st.set.Warnings, noShape)
	}
	st.out.Set = st.set
	st.started = time.Now()

	runErr := optionError(st.run(ctx))
	if ctx.Err() != nil {
		st.set.Interrupted = true
		runErr = ctx.Err()
	}
	st.set.End = time.Now().UTC()
	if err := st.flush(); err != nil && runErr == nil {
		runErr = err
	}
	return st.out, runErr
}

// optionError makes a backend's refusal of an option a ValidationError
// (the CLI's usage error).
func optionError(err error) error {
	var oe *backend.OptionError
	if errors.As(err, &oe) {
		return &ValidationError{oe.Msg}
	}
	return err
}

// configMap is the results' config: the options, the backend's, and the
// scenario's (nil: the matrix).
func (o Options) configMap(sc scenario.Scenario) map[string]string {
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ",")
	}
	m := map[string]string{
		"profile":      o.Profile,
		"tests":        strings.Join(o.Tests, ","),
		"flows":        ints(o.Flows),
		"http_clients": strconv.Itoa(o.HTTPClients),
		"repeat":       strconv.Itoa(o.Repeat),
		"duration":     o.Duration.String(),
		"warmup":       o.Warmup.String(),
		"mtus":         ints(o.MTUs),
		"interleaving": "each repeat runs every cell of every MTU once, in an order shuffled per repeat (seed); every cell starts with flushed conntrack tables; TIME_WAIT sockets cannot be flushed and are recorded per repeat (time_wait_at_start)",
		"seed":         strconv.FormatUint(o.Seed, 10),
	}
	if i := o.Interference; i.ThresholdPct > 0 {
		m["busy_threshold_pct"] = strconv.FormatFloat(i.ThresholdPct, 'g', -1, 64)
		m["busy_retries"] = strconv.Itoa(i.Retries)
	}
	maps.Copy(m, o.Backend.Config())
	scenarioConfig(m, sc)
	return m
}

// state is one suite run in progress.
type state struct {
	r       *Runner
	o       Options
	set     *result.Set
	out     *Outcome
	log     *slog.Logger
	backend backend.Backend
	sc      scenarioRun // nil: the matrix
	token   string      // CNIBENCH_TOKEN of this run's servers and clients

	mu      sync.Mutex
	runs    map[string]*result.Run
	order   []string
	rank    map[string]int // run key → position in the plan (results.json's order)
	total   int
	done    int
	started time.Time
	early   []string // warnings before the set existed
	// profiles are the per-repeat CPU profiles written so far, by run key.
	profiles map[string][]string
	// rerun: the repeats measured now are re-runs of busy ones.
	rerun bool
}

// recordDatapaths records a deployment's datapaths in the results, skipped
// ones with their reason.
func (st *state) recordDatapaths(dps []backend.Datapath) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, d := range dps {
		if slices.ContainsFunc(st.set.Datapaths, func(x result.Datapath) bool { return x.Name == d.Name }) {
			continue
		}
		if d.Skipped != "" {
			st.set.Skipped = append(st.set.Skipped, result.Skip{Labels: map[string]string{"datapath": d.Name}, Reason: "skipped: " + d.Skipped})
			st.progressf("%s: skipped: %s", d.Name, d.Skipped)
		}
		st.set.Datapaths = append(st.set.Datapaths, result.Datapath{Name: d.Name, Description: d.Description, PacketPath: d.PacketPath, Skipped: d.Skipped})
	}
}

// skip records labels as not run, with the reason.
func (st *state) skip(labels map[string]string, reason string) {
	st.mu.Lock()
	st.set.Skipped = append(st.set.Skipped, result.Skip{Labels: labels, Reason: reason})
	st.mu.Unlock()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// record adds one repeat to its cell's run and writes results.json.
func (st *state) record(c cell, rep int, res *result.Result, failure string, took time.Duration) {
	st.mu.Lock()
	key := result.LabelKey(c.labels())
	run, ok := st.runs[key]
	if !ok {
		run = &result.Run{Labels: c.labels()}
		st.runs[key] = run
		st.order = append(st.order, key)
	}
	var line, busy string
	if res != nil {
		if run.Config == nil {
			run.Config = res.Config
		}
		busy = st.markBusy(res.Repeats)
		for _, r := range res.Repeats {
			r.Index, r.Rerun = len(run.Repeats), st.rerun
			run.Repeats = append(run.Repeats, r)
		}
		for _, w := range res.Warnings {
			if !slices.Contains(run.Warnings, w) {
				run.Warnings = append(run.Warnings, w)
			}
		}
		if res.Interrupted {
			run.Interrupted = true
		}
		primary := result.TransPerSec
		if result.IsStream(c.Test) {
			primary = result.ThroughputBitsPerSec
		}
		if len(res.Repeats) > 0 {
			line = result.Format(primary, res.Repeats[0].Metrics[primary])
		}
	} else {
		run.Repeats = append(run.Repeats, result.Repeat{Index: len(run.Repeats), Start: time.Now().UTC(), Error: failure, Rerun: st.rerun})
		line = failure
	}
	which := fmt.Sprintf("repeat %d/%d", rep+1, st.o.Repeat)
	if st.rerun {
		which = "re-run of a busy repeat"
	}
	run.Summary = result.SummarizeRepeats(run.Repeats)
	st.done++
	done, total := st.done, st.total
	st.mu.Unlock()
	if err := st.flush(); err != nil {
		st.log.Error("write results", "err", err)
	}
	el := time.Since(st.started)
	eta := "-"
	if done > 0 && total > done {
		eta = (el / time.Duration(done) * time.Duration(total-done)).Round(time.Second).String()
	}
	st.progressf("[%d/%d] %s (%s, %.1fs): %s%s · ETA %s", done, total, c, which, took.Seconds(), line, busy, eta)
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

// flush writes results.json atomically.
func (st *state) flush() error {
	st.mu.Lock()
	// The plan's order, not the shuffled order of measurement.
	slices.SortStableFunc(st.order, func(a, b string) int { return st.rank[a] - st.rank[b] })
	st.set.Runs = st.set.Runs[:0]
	for _, k := range st.order {
		st.set.Runs = append(st.set.Runs, *st.runs[k])
	}
	var buf bytes.Buffer
	err := result.Write(&buf, st.set)
	st.mu.Unlock()
	if err != nil {
		return err
	}
	tmp := st.out.ResultsPath + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, st.out.ResultsPath)
}

func (st *state) progressf(format string, a ...any) {
	if st.r.Progress != nil {
		fmt.Fprintf(st.r.Progress, format+"\n", a...)
	}
}

// warnOnce adds a run-wide warning to the results and prints it once (as
// progress, not also as a log line).
func (st *state) warnOnce(w string) {
	st.mu.Lock()
	list := &st.early
	if st.set != nil {
		list = &st.set.Warnings
	}
	if slices.Contains(*list, w) {
		st.mu.Unlock()
		return
	}
	*list = append(*list, w)
	st.mu.Unlock()
	st.progressf("warning: %s", w)
}

// measuredMetrics returns the runs whose labels include match (for
// checks that price a finding with the matrix's figures).
func (st *state) measuredMetrics(match map[string]string) []result.Run {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.set.Find(match)
}

// checkOutDir creates --out (and, with --cpu-profile, its profiles
// directory) and checks that a file can be written there: a run that
// could not keep what it measures is refused before it starts.
func checkOutDir(o Options) error {
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return &ValidationError{fmt.Sprintf("--out %s: %v: choose a directory this user can write", o.OutDir, err)}
	}
	f, err := os.CreateTemp(o.OutDir, ".cnibench-write-check-*")
	if err != nil {
		return &ValidationError{fmt.Sprintf("--out %s: cannot write there (%v): choose a directory this user can write", o.OutDir, err)}
	}
	f.Close()
	os.Remove(f.Name())
	if o.CPUProfile != nil {
		dir := filepath.Join(o.OutDir, ProfileDir, "repeats")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return &ValidationError{fmt.Sprintf("--cpu-profile: cannot create %s for the profiles (%v): choose another --out", dir, err)}
		}
	}
	return nil
}
