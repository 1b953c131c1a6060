package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/internal/lab"
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
	if len(o.Datapaths) == 0 {
		for _, d := range known {
			if d != NoTrack {
				o.Datapaths = append(o.Datapaths, d)
			}
		}
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the cnibench binary: %w", err)
		}
		o.Binary = exe
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
	st := &state{r: r, o: o, set: set, out: out, runs: map[string]*result.Run{}, log: log}
	st.total = st.plannedRuns()
	st.started = time.Now()

	var runErr error
	for i, mtu := range o.MTUs {
		if err := st.runMTU(ctx, mtu, i == 0); err != nil {
			runErr = err
			break
		}
		if ctx.Err() != nil {
			break
		}
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
	return map[string]string{
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
		"interleaving": "each repeat runs every cell once, in an order rotated per repeat",
	}
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
		switch d {
		case "baseline":
			n += len(st.o.testVariants(main)) * st.o.Repeat
		case NoTrack:
			n += len(st.o.Flows) * st.o.Repeat
		default:
			n += 2 * len(st.o.testVariants(main)) * st.o.Repeat
		}
	}
	return n
}

func (st *state) datapathsFor(main bool) []string {
	dps := slices.Clone(st.o.Datapaths)
	if main && st.o.Conntrack && slices.Contains(st.o.Tests, engine.TCPCRR) && !slices.Contains(dps, NoTrack) &&
		slices.Contains(dps, "veth-routing") {
		dps = append(dps, NoTrack)
	}
	return dps
}

// server is a `cnibench serve` inside a server pod.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

func (st *state) runMTU(ctx context.Context, mtu int, main bool) error {
	l := lab.New(st.log)
	dps := st.datapathsFor(main)
	st.progressf("lab: building %d datapath(s) with wire MTU %d", len(dps), mtu)
	if err := l.Up(ctx, lab.Options{Datapaths: dps, MTU: mtu}); err != nil {
		return fmt.Errorf("bring the lab up (MTU %d): %w", mtu, err)
	}
	// Whatever happens from here, the lab comes down.
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Down(dctx); err != nil {
			st.log.Error("lab teardown failed; run 'cnibench lab down'", "err", err)
			st.set.Warnings = append(st.set.Warnings, "lab teardown failed: "+err.Error())
		}
	}()
	st.recordDatapaths(l, dps)

	// One server per endpoint, started once.
	var cells []cell
	byPod := map[string]*server{}   // one server per pod and address
	servers := map[string]*server{} // datapath/path → its server
	defer func() {
		for _, s := range byPod {
			s.stop()
		}
	}()
	for _, dp := range l.Datapaths() {
		_, topo, err := l.Datapath(dp)
		if err != nil {
			return err
		}
		for _, ep := range topo.Paths {
			key := dp + "/" + string(ep.Kind)
			// Paths may share a server pod.
			pod := ep.Server.Name + "/" + ep.ServerIP.String()
			s, ok := byPod[pod]
			if !ok {
				var err error
				if s, err = st.startServer(ctx, ep); err != nil {
					return fmt.Errorf("start the server of %s: %w", key, err)
				}
				byPod[pod] = s
			}
			servers[key] = s
			for _, tv := range st.o.testVariants(main) {
				if dp == NoTrack && (tv[0] != engine.TCPCRR || ep.Kind != lab.CrossNode) {
					continue
				}
				f, _ := strconv.Atoi(tv[1])
				cells = append(cells, cell{Datapath: dp, Path: string(ep.Kind), Test: tv[0], Flows: f, MTU: mtu})
			}
		}
	}
	// Correct the ETA's plan for datapaths that turned out to be skipped.
	st.mu.Lock()
	st.total += len(cells)*st.o.Repeat - st.plannedFor(main)
	st.mu.Unlock()
	if len(cells) == 0 {
		st.progressf("lab: no datapath can run here")
		return nil
	}
	// Repeats interleaved: every repeat runs every cell once, starting at a
	// different cell each time, so slow drifts of the machine spread evenly.
	for rep := 0; rep < st.o.Repeat; rep++ {
		off := (rep * len(cells)) / st.o.Repeat
		for k := range cells {
			c := cells[(k+off)%len(cells)]
			if ctx.Err() != nil {
				return nil
			}
			ep, err := l.Endpoint(c.Datapath, lab.PathKind(c.Path))
			if err != nil {
				return err
			}
			_, topo, _ := l.Datapath(c.Datapath)
			dp, _, _ := l.Datapath(c.Datapath)
			st.measure(ctx, c, rep, ep, topo, dp, servers[c.Datapath+"/"+c.Path])
		}
	}
	return nil
}

func (st *state) recordDatapaths(l *lab.Lab, dps []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	skipped := l.Skipped()
	for _, name := range dps {
		if slices.ContainsFunc(st.set.Datapaths, func(d result.Datapath) bool { return d.Name == name }) {
			continue
		}
		d := result.Datapath{Name: name, Description: lab.Describe(name)}
		if dp, _, err := l.Datapath(name); err == nil {
			d.Description, d.PacketPath = dp.Description(), dp.PacketPath()
		}
		if err, ok := skipped[name]; ok {
			d.Skipped = err.Error()
			st.set.Skipped = append(st.set.Skipped, result.Skip{Labels: map[string]string{"datapath": name}, Reason: "skipped: " + err.Error()})
			st.progressf("%s: skipped: %v", name, err)
		}
		st.set.Datapaths = append(st.set.Datapaths, d)
	}
}

func (st *state) startServer(ctx context.Context, ep lab.Endpoint) (*server, error) {
	addr := fmt.Sprintf("%s:%d", ep.ServerIP, servePort)
	cmd := exec.Command(st.o.Binary, "serve", "--listen", addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := ep.Server.Start(cmd); err != nil {
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
				if strings.Contains(line, "listening on") {
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

// measure runs one repeat of a cell in the client pod and records it.
func (st *state) measure(ctx context.Context, c cell, rep int, ep lab.Endpoint, topo *lab.Topology, dp lab.Datapath, srv *server) {
	args := []string{"run", "--target", srv.addr, "--test", c.Test,
		"--flows", strconv.Itoa(c.Flows), "--duration", st.o.Duration.String(),
		"--warmup", st.o.Warmup.String(), "--repeat", "1", "--format", "json", "-q"}
	cmd := exec.Command(st.o.Binary, args...)
	// Own process group: the terminal's Ctrl-C reaches only the suite, which
	// then interrupts the client so that it reports what it measured.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	ctBefore := conntrackCount(topo)
	bpfBefore := bpfCounters(dp)
	t0 := time.Now()
	err := ep.Client.Start(cmd)
	if err == nil {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				err = <-done
			}
		}
	}
	el := time.Since(t0)
	var res result.Result
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil || res.Schema != result.SchemaResult {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && err != nil {
			msg = err.Error()
		}
		if ctx.Err() != nil {
			return
		}
		st.record(c, rep, nil, fmt.Sprintf("client failed: %s", firstLine(msg)), el)
		return
	}
	if len(res.Repeats) > 0 {
		m := res.Repeats[0].Metrics
		if m != nil && topo != nil && ctBefore >= 0 {
			if after := conntrackCount(topo); after >= 0 {
				m[result.ConntrackEntries] = float64(after)
			}
		}
		if m != nil && bpfBefore != nil {
			for k, v := range bpfDelta(bpfBefore, bpfCounters(dp)) {
				m[k] = v
			}
		}
	}
	res.Config["expected_path_mtu"] = strconv.Itoa(topo.PathMTU)
	res.Config["pod_mtu"] = strconv.Itoa(topo.PodMTU)
	st.record(c, rep, &res, "", el)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// conntrackCount sums the conntrack entries of both nodes, -1 if unknown.
func conntrackCount(topo *lab.Topology) int {
	if topo == nil {
		return -1
	}
	n := 0
	for _, node := range topo.Nodes {
		if node == nil {
			continue
		}
		c, err := node.ConntrackCount()
		if err != nil {
			return -1
		}
		n += c
	}
	return n
}

func bpfCounters(dp lab.Datapath) map[string]uint64 {
	cr, ok := dp.(lab.CounterReporter)
	if !ok {
		return nil
	}
	c, err := cr.Counters()
	if err != nil {
		return nil
	}
	return c
}

// bpfDelta sums per-node counters ("node1.redirect_peer") into metrics
// ("bpf_redirect_peer_packets").
func bpfDelta(before, after map[string]uint64) map[string]float64 {
	out := map[string]float64{}
	for k, a := range after {
		_, name, ok := strings.Cut(k, ".")
		if !ok {
			name = k
		}
		d := float64(a) - float64(before[k])
		if d < 0 {
			d = 0
		}
		out["bpf_"+name+"_packets"] += d
	}
	return out
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
