package incluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

// rawPodCaps are what a raw point's client pod gets, for that point only:
// NET_ADMIN to program its own netfilter and TCX, BPF to load the eBPF
// filters (PERFMON for their per-CPU counters' reads is not needed).
var rawPodCaps = []string{"NET_ADMIN", "BPF"}

// clusterRaw is a raw mechanism loaded inside a pod of its own.
type clusterRaw struct {
	ca      *cluster.Access
	mech    string
	client  backend.Place
	target  string
	stdin   *io.PipeWriter
	lines   *bufio.Scanner
	done    chan error
	cancel  context.CancelFunc
	remove  func(context.Context) error
	metrics map[string]float64
	config  map[string]string
	closed  bool
}

func (p *clusterRaw) Metrics() map[string]float64 { return p.metrics }
func (p *clusterRaw) Config() map[string]string   { return p.config }

// Target: the cells run in the filtering pod against the allowed server.
func (p *clusterRaw) Target(scenario.Cell) (scenario.Target, error) {
	return scenario.Target{Client: p.client, Args: []string{"--target", p.target}}, nil
}

// Close tells the agent to remove the filter, reads its release proof
// (filter_teardown_seconds: from the start of the removal until the
// denied server answered again), and deletes the pod.
func (p *clusterRaw) Close(ctx context.Context) (map[string]float64, error) {
	if p.closed {
		return nil, nil
	}
	p.closed = true
	ctx = context.WithoutCancel(ctx)
	_, _ = p.stdin.Write([]byte("stop\n"))
	r, rerr := p.next()
	p.stdin.Close()
	var errs []error
	select {
	case err := <-p.done:
		if err != nil && rerr == nil {
			errs = append(errs, fmt.Errorf("the filter agent: %w", err))
		}
	case <-time.After(2 * time.Minute):
		errs = append(errs, errors.New("the filter agent did not end within 2m after its release"))
	}
	p.cancel()
	errs = append(errs, p.remove(ctx))
	var m map[string]float64
	switch {
	case rerr != nil:
		errs = append(errs, rerr)
	case r.Error != "":
		errs = append(errs, errors.New(r.Error))
	default:
		m = map[string]float64{filter.TeardownSeconds: r.Watch.AfterSeconds}
	}
	return m, errors.Join(errs...)
}

// next reads the agent's next report line.
func (p *clusterRaw) next() (PodReport, error) {
	var r PodReport
	if !p.lines.Scan() {
		if err := p.lines.Err(); err != nil {
			return r, fmt.Errorf("read the filter agent's report: %w", err)
		}
		return r, errors.New("the filter agent ended without a report")
	}
	if err := json.Unmarshal(p.lines.Bytes(), &r); err != nil || r.Schema != SchemaPodFilter {
		return r, fmt.Errorf("the filter agent's report is not %s: %s", SchemaPodFilter, firstText(p.lines.Text()))
	}
	return r, nil
}

func firstText(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// PrepareRaw sets up one raw point on a cluster: a client pod of
// its own on the client's node, with NET_ADMIN and BPF for this point
// only, loads the mechanism on its own egress (`cnibench k8s agent
// egress-filter`: the deny set of DenySet, enforcement proven by
// probing the denied server pod every 2 ms while the allowed one answers)
// and holds it while the cells run from that pod; Close removes it, proves
// the release and deletes the pod.
func PrepareRaw(ctx context.Context, ca *cluster.Access, mech string, n int, seed uint64, traversal string, o Options) (scenario.Prepared, error) {
	o = o.WithDefaults()
	ca = o.targets(ca)
	if n > o.MaxRules {
		return nil, fmt.Errorf("%w: %s with %d rules: a cluster point is bounded at %d rules; pass --cluster-scale if the nodes may take up to %d",
			scenario.ErrTooLarge, mech, n, o.MaxRules, ScaleClusterMaxRules)
	}
	if ca.NewClientPod == nil {
		return nil, fmt.Errorf("%w: this cluster deployment cannot start a pod for %s", scenario.ErrNeedsCluster, mech)
	}
	client, remove, err := ca.NewClientPod(ctx, "flt", rawPodCaps)
	if err != nil {
		return nil, fmt.Errorf("start the filtering client pod for %s: %w", mech, err)
	}
	denied := net.JoinHostPort(ca.Other.IP, strconv.Itoa(ca.Other.Port))
	allowed := net.JoinHostPort(ca.Allowed.IP, strconv.Itoa(ca.Allowed.Port))
	args := []string{"egress-filter", "--mechanism", mech, "--rules", strconv.Itoa(n), "--seed", strconv.FormatUint(seed, 10),
		"--traversal", traversal, "--denied", denied, "--allowed", allowed, "--wait", o.ProofWait(n).String()}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stdinR, stdinW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	p := &clusterRaw{ca: ca, mech: mech, client: client, target: allowed, stdin: stdinW, done: make(chan error, 1),
		cancel: cancel, remove: remove, lines: bufio.NewScanner(outR), metrics: map[string]float64{}}
	p.lines.Buffer(make([]byte, 64<<10), 1<<20)
	go func() {
		err := ca.Agent(actx, client, args, stdinR, outW, &stderr)
		outW.Close()
		p.done <- err
	}()
	fail := func(err error) (scenario.Prepared, error) {
		p.closed = true
		stdinW.Close()
		cancel()
		<-p.done
		if s := strings.TrimSpace(stderr.String()); s != "" && ctx.Err() == nil && !errors.Is(err, backend.ErrNotSupported) {
			err = scenario.WithEvidence(err, fmt.Sprintf("%s with %d rules", mech, n), []string{"the filter agent's stderr: " + firstText(s)}, nil)
		}
		return nil, errors.Join(err, remove(context.WithoutCancel(ctx)))
	}
	r, err := p.next()
	if err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			err = fmt.Errorf("%w (%s)", err, firstText(s))
		}
		return fail(err)
	}
	if r.Error != "" {
		err := errors.New(r.Error)
		if strings.Contains(r.Error, "cannot run in this pod") {
			err = fmt.Errorf("%w: %s", backend.ErrNotSupported, r.Error)
		}
		return fail(err)
	}
	p.metrics[filter.SetupSeconds] = r.Watch.AfterSeconds
	p.metrics[filter.SetupReturnedSeconds] = r.ReturnedSeconds
	p.metrics[filter.SetupResolutionSeconds] = r.Watch.ResolutionSeconds
	if r.KernelBytesKnown {
		p.metrics[filter.KernelBytes] = float64(r.KernelBytes)
	}
	p.config = map[string]string{
		"filter_seed":            strconv.FormatUint(seed, 10),
		"filter_rules":           strconv.Itoa(n),
		"filter_denied_addr":     denied + " (" + ca.Other.Name + ")",
		"filter_allowed_addr":    allowed + " (" + ca.Allowed.Name + ")",
		"filter_target":          "a client pod's own egress on " + r.Dev + " (pod " + client.String() + ", NET_ADMIN and BPF added for this point)",
		"filter_load_method":     r.Info.Method,
		"filter_load_batches":    strconv.Itoa(r.Info.Batches),
		"filter_traversal_built": r.Info.Traversal,
		"filter_probe_interval":  watchInterval.String(),
	}
	return p, nil
}
