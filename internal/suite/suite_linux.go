package suite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// Runner runs a suite.
type Runner struct {
	Logger *slog.Logger
	// Progress receives one line per measurement (and ETA).
	Progress io.Writer
	// LockPath is the lock held for the whole run (one suite per host);
	// empty means DefaultLockPath.
	LockPath string
}

// Outcome is what a suite run produced.
type Outcome struct {
	Set         *result.Set
	ResultsPath string
}

// servePort is where each server pod's `cnibench serve` listens.
const servePort = engine.DefaultPort

// Run runs the suite. The results measured so far are written to
// OutDir/results.json after every measurement; on cancellation the lab is
// torn down and Run returns the partial Outcome with ctx's error.
func (r *Runner) Run(ctx context.Context, o Options) (*Outcome, error) {
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	known := lab.Names()
	if err := o.Validate(known); err != nil {
		return nil, err
	}
	if o.Scenario != "" {
		o = o.withScenarioDefaults()
	}
	if o.Backend != nil {
		// A cluster brings its own datapaths (its CNI and the host
		// network baseline).
		o.Conntrack = false
		o.Wire = ""
	} else if len(o.Datapaths) == 0 {
		o.Datapaths = defaultDatapaths(known)
	}
	if o.Backend == nil && len(o.Datapaths) > 0 && !o.NoBaseline && !slices.Contains(o.Datapaths, "baseline") && slices.Contains(known, "baseline") {
		// The graded summary compares every datapath with the baseline.
		o.Datapaths = append([]string{"baseline"}, o.Datapaths...)
	}
	if o.Pin == "" {
		o.Pin = PinNone
	}
	if o.Wire == "" && o.Backend == nil {
		o.Wire = lab.DefaultWire
	}
	if o.Seed == 0 {
		seed, err := newSeed()
		if err != nil {
			return nil, err
		}
		o.Seed = seed
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the cnibench binary: %w", err)
		}
		o.Binary = exe
	}
	clientCPUs, serverCPUs, err := pinCPUs(o.Pin)
	if err != nil {
		return nil, &ValidationError{err.Error()}
	}
	lockPath := r.LockPath
	if lockPath == "" {
		lockPath = DefaultLockPath
	}
	release, err := acquireSuiteLock(lockPath)
	if err != nil {
		return nil, err
	}
	defer release()
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("create --out %s: %w", o.OutDir, err)
	}
	out := &Outcome{ResultsPath: filepath.Join(o.OutDir, "results.json")}
	set := &result.Set{
		Schema: result.SchemaResults,
		Tool:   buildinfo.Tool(),
		Start:  time.Now().UTC(),
		Host:   hostinfo.Collect(),
		Config: o.configMap(),
	}
	out.Set = set
	st := &state{r: r, o: o, set: set, out: out, runs: map[string]*result.Run{}, log: log,
		token: token, clientCPUs: clientCPUs, serverCPUs: serverCPUs, rank: map[string]int{}, scenario: map[string]bool{}}
	st.backend = o.Backend
	if st.backend == nil {
		st.backend = labBackend{st}
		set.Config["backend"] = "lab"
		st.noteLeakedLabs()
		st.warnCPUs()
	} else {
		set.Config["backend"] = st.backend.Name()
	}
	st.total = st.plannedRuns()
	st.started = time.Now()

	if o.Backend == nil {
		// The lab's servers and clients are this process's children; a
		// cluster's run in its pods.
		sp, err := lab.NewSpawner()
		if err != nil {
			return nil, err
		}
		st.spawner = sp
		if _, err := sp.Cgroup(); err != nil {
			log.Debug("children run without a cgroup of their own (the parent-death signal still ends them)", "reason", err)
		}
		// Servers and labs are down by then; this kills anything that
		// is not.
		defer sp.Close()
	}
	var runErr error
	if o.Scenario != "" {
		runErr = st.runScenario(ctx)
	} else {
		runErr = st.runAll(ctx)
	}
	if ctx.Err() != nil {
		set.Interrupted = true
		runErr = ctx.Err()
	}
	set.End = time.Now().UTC()
	if err := st.flush(); err != nil && runErr == nil {
		runErr = err
	}
	return out, runErr
}

func (o Options) configMap() map[string]string {
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ",")
	}
	m := map[string]string{
		"profile":      o.Profile,
		"datapaths":    strings.Join(o.Datapaths, ","),
		"tests":        strings.Join(o.Tests, ","),
		"flows":        ints(o.Flows),
		"http_clients": strconv.Itoa(o.HTTPClients),
		"repeat":       strconv.Itoa(o.Repeat),
		"duration":     o.Duration.String(),
		"warmup":       o.Warmup.String(),
		"mtus":         ints(o.MTUs),
		"conntrack":    strconv.FormatBool(o.Conntrack),
		"interleaving": "each repeat runs every cell of every MTU once, in an order shuffled per repeat (seed); every cell starts with flushed conntrack tables; TIME_WAIT sockets cannot be flushed and are recorded per repeat (time_wait_at_start)",
		"seed":         strconv.FormatUint(o.Seed, 10),
		"pin":          o.Pin,
		"wire":         o.Wire,
		"baseline":     strconv.FormatBool(!o.NoBaseline),
	}
	o.scenarioConfig(m)
	return m
}

// state is one suite run in progress.
type state struct {
	r       *Runner
	o       Options
	set     *result.Set
	out     *Outcome
	log     *slog.Logger
	mu      sync.Mutex
	runs    map[string]*result.Run
	order   []string
	total   int
	done    int
	started time.Time

	rank                   map[string]int  // run key → position in the matrix
	scenario               map[string]bool // variants run only on the conntrack scenario's cells
	token                  string          // CNIBENCH_TOKEN of this run's servers and clients
	backend                backend.Backend // where the matrix runs
	spawner                *lab.Spawner
	clientCPUs, serverCPUs *unix.CPUSet // nil: not pinned
}

// plannedRuns estimates the number of client runs (for the ETA).
func (st *state) plannedRuns() int {
	n := 0
	for i := range st.o.MTUs {
		n += st.plannedFor(i == 0)
	}
	return n
}

// plannedFor estimates the client runs of one lab (main or MTU sweep).
func (st *state) plannedFor(main bool) int {
	n := 0
	for _, d := range st.datapathsFor(main) {
		switch {
		case d == "baseline":
			n += len(st.o.testVariants(main)) * st.o.Repeat
		case st.scenario[d]:
			n += len(st.o.Flows) * st.o.Repeat
		default:
			n += 2 * len(st.o.testVariants(main)) * st.o.Repeat
		}
	}
	return n
}

func (st *state) datapathsFor(main bool) []string {
	dps := slices.Clone(st.o.Datapaths)
	if main && st.o.Conntrack && slices.Contains(st.o.Tests, engine.TCPCRR) {
		for _, v := range scenarioVariants(dps, lab.Names()) {
			dps = append(dps, v)
			st.scenario[v] = true
		}
	}
	return dps
}

// server is a `cnibench serve` inside a server pod.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

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

func (st *state) startServer(ctx context.Context, ep lab.Endpoint) (*server, error) {
	addr := fmt.Sprintf("%s:%d", ep.ServerIP, servePort)
	return st.startServerIn(ctx, ep.Server, addr, nil, "serve", "--listen", addr)
}

// serveIn starts `cnibench serve ARGS` in ns for a scenario
// (scenario.Env.Serve).
func (st *state) serveIn(ctx context.Context, ns *lab.NS, args ...string) (*scenario.Server, error) {
	s, err := st.startServerIn(ctx, ns, ns.Name, nil, append([]string{"serve"}, args...)...)
	if err != nil {
		return nil, err
	}
	return &scenario.Server{PID: s.cmd.Process.Pid, Stop: s.stop}, nil
}

// startIn starts `cnibench ARGS` (a long-running helper such as a
// userspace tunnel) in ns with stdin for a scenario (scenario.Env.Start).
func (st *state) startIn(ctx context.Context, ns *lab.NS, stdin []byte, args ...string) (*scenario.Server, error) {
	s, err := st.startServerIn(ctx, ns, ns.Name, stdin, args...)
	if err != nil {
		return nil, err
	}
	return &scenario.Server{PID: s.cmd.Process.Pid, Stop: s.stop}, nil
}

// startServerIn starts `cnibench ARGS` in ns on the servers' CPUs and
// returns once its first line on stderr says it is ready ("… listening
// on …" or "ready…"); addr names it in messages.
func (st *state) startServerIn(ctx context.Context, ns *lab.NS, addr string, stdin []byte, args ...string) (*server, error) {
	cmd := exec.Command(st.o.Binary, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = st.childEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := st.spawner.Start(ns, cmd, st.serverCPUs); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, addr: addr, done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		first := true
		for sc.Scan() {
			line := sc.Text()
			if first {
				first = false
				if strings.Contains(line, "listening on") || strings.HasPrefix(line, "ready") {
					ready <- nil
				} else {
					ready <- errors.New(line)
				}
				continue
			}
			st.log.Debug("serve", "addr", addr, "line", line)
		}
		if first {
			ready <- errors.New("exited before listening")
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case err := <-ready:
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("cnibench serve on %s: %w", addr, err)
		}
	case <-time.After(15 * time.Second):
		s.stop()
		return nil, fmt.Errorf("cnibench serve on %s did not start within 15s", addr)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	return s, nil
}

func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
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
	var line string
	if res != nil {
		if run.Config == nil {
			run.Config = res.Config
		}
		for _, r := range res.Repeats {
			r.Index = len(run.Repeats)
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
		if engine.IsStream(c.Test) {
			primary = result.ThroughputBitsPerSec
		}
		if len(res.Repeats) > 0 {
			line = result.Format(primary, res.Repeats[0].Metrics[primary])
		}
	} else {
		run.Repeats = append(run.Repeats, result.Repeat{Index: len(run.Repeats), Start: time.Now().UTC(), Error: failure})
		line = failure
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
	st.progressf("[%d/%d] %s (repeat %d/%d, %.1fs): %s · ETA %s", done, total, c, rep+1, st.o.Repeat, took.Seconds(), line, eta)
}

// flush writes results.json atomically.
func (st *state) flush() error {
	st.mu.Lock()
	// The matrix's order, not the shuffled order of measurement.
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
