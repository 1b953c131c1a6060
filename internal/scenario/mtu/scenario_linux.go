package mtu

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

type state struct{}

// Close implements scenario.Scenario: every point undoes itself.
func (s *Scenario) Close(context.Context) error { return nil }

// prepared is one setting applied to a datapath's cross-node pods.
type prepared struct {
	p              point
	env            scenario.Env
	client, server podRef
	nodes          [2]*lab.NS
	correct, mtu   int
	stall          time.Duration // StallTimeout
	metrics        map[string]float64
	config         map[string]string
	undo           []func() error // in reverse order at Close
}

func (pr *prepared) Metrics() map[string]float64 { return pr.metrics }
func (pr *prepared) Config() map[string]string   { return pr.config }

// Close implements scenario.Prepared: MTUs restored, the nft table
// removed, the pods' learnt path MTUs flushed.
func (pr *prepared) Close(context.Context) (map[string]float64, error) {
	var errs []error
	for i := len(pr.undo) - 1; i >= 0; i-- {
		errs = append(errs, pr.undo[i]())
	}
	pr.undo = nil
	return nil, errors.Join(errs...)
}

// Prepare implements scenario.Scenario: the cross-node pods' interfaces
// and their node-side veths set to the setting's MTU, the ICMP rule on
// both nodes (counting, or dropping with icmp_frag_needed=drop), the
// pods' learnt path MTUs flushed. The point is skipped off the lab and on
// a wire that is not jumbo.
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, sp scenario.Point) (scenario.Prepared, error) {
	p := pointOf(sp)
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("mtu: %w", err)
	}
	topo, ep := lx.Topology, lx.Endpoint
	if topo == nil || topo.Nodes[0] == nil || topo.Nodes[1] == nil || ep.Kind != lab.CrossNode || ep.Client == nil || ep.Server == nil {
		return nil, fmt.Errorf("mtu: %s has no cross-node pods (e.g. vxlan, veth-routing have): %w", env.Datapath, backend.ErrNotSupported)
	}
	wire, err := linkMTU(topo.Nodes[0], lab.WireIf)
	if err != nil {
		return nil, fmt.Errorf("mtu: %w", err)
	}
	if wire < MinWireMTU {
		return nil, fmt.Errorf("mtu: the wire's MTU is %d, not a jumbo wire (at least %d): run with --mtu 9000: %w", wire, MinWireMTU, backend.ErrNotSupported)
	}
	pr := &prepared{p: p, env: env, nodes: topo.Nodes, correct: topo.PathMTU, stall: StallTimeout, metrics: map[string]float64{}}
	if pr.mtu, err = podMTUFor(p.setting, pr.correct); err != nil {
		return nil, err
	}
	if pr.client, err = podOf(topo, ep.Client, topo.Nodes[0], lab.RoleClient1); err != nil {
		return nil, fmt.Errorf("mtu: client pod: %w", err)
	}
	if pr.server, err = podOf(topo, ep.Server, topo.Nodes[1], lab.RoleServer); err != nil {
		return nil, fmt.Errorf("mtu: server pod: %w", err)
	}
	pr.config = map[string]string{
		"mtu_setting": p.setting, "icmp_frag_needed": p.icmp,
		"pod_mtu": strconv.Itoa(pr.mtu), "mtu_correct": strconv.Itoa(pr.correct), "wire_mtu": strconv.Itoa(wire),
	}
	t0 := time.Now()
	if err := pr.setUp(p.icmp == ICMPDrop); err != nil {
		_, cerr := pr.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(fmt.Errorf("mtu: %w", err), cerr)
	}
	pr.metrics["mtu_setup_seconds"] = time.Since(t0).Seconds()
	got, err := linkMTU(pr.client.ns, lab.PodIf)
	if err != nil {
		_, cerr := pr.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(fmt.Errorf("mtu: %w", err), cerr)
	}
	pr.metrics[MetricPodMTU] = float64(got)
	return pr, nil
}

// setUp applies the MTU and the ICMP rule, recording their undo.
func (pr *prepared) setUp(drop bool) error {
	for _, pod := range []podRef{pr.client, pr.server} {
		for _, dev := range []struct {
			ns   *lab.NS
			name string
		}{{pod.ns, lab.PodIf}, {pod.node, pod.hostDev}} {
			old, err := linkMTU(dev.ns, dev.name)
			if err != nil {
				return err
			}
			// The undo first: a half-set pair is restored too.
			pr.undo = append(pr.undo, func() error { return setLinkMTU(dev.ns, dev.name, old) })
			if err := setLinkMTU(dev.ns, dev.name, pr.mtu); err != nil {
				return err
			}
		}
	}
	for _, node := range pr.nodes {
		pr.undo = append(pr.undo, func() error { return removeICMPRule(node) })
		if err := installICMPRule(node, drop); err != nil {
			return err
		}
	}
	pr.undo = append(pr.undo, pr.flush)
	return pr.flush()
}

// flush forgets the path MTUs the pods learnt (route exceptions), so that
// every cell starts from the interfaces' MTU.
func (pr *prepared) flush() error {
	return errors.Join(flushRouteCache(pr.client.ns), flushRouteCache(pr.server.ns))
}

// counters is what BeginCell snapshots and the end function compares.
type counters struct {
	fragNeeded          uint64
	retrans, unreachRcv uint64
	serverRx            uint64
}

func (pr *prepared) read() (counters, error) {
	var c counters
	for _, node := range pr.nodes {
		n, err := fragNeededCount(node)
		if err != nil {
			return c, err
		}
		c.fragNeeded += n
	}
	snmp, err := snmpOf(pr.client.ns)
	if err != nil {
		return c, err
	}
	c.retrans, c.unreachRcv = snmp["Tcp:RetransSegs"], snmp["Icmp:InDestUnreachs"]
	c.serverRx, err = rxBytes(pr.server.ns, lab.PodIf)
	return c, err
}

// BeginCell implements scenario.Checker: the pods' learnt path MTUs are
// flushed (each cell detects and discovers its own), the counters read;
// the returned function reports their deltas and the client's path MTU
// after the cell. It fails a cell only when a counter cannot be read.
func (pr *prepared) BeginCell(scenario.Cell) (func() (map[string]float64, error), error) {
	if err := pr.flush(); err != nil {
		return nil, fmt.Errorf("mtu: %w", err)
	}
	c0, err := pr.read()
	if err != nil {
		return nil, fmt.Errorf("mtu: %w", err)
	}
	return func() (map[string]float64, error) {
		c1, err := pr.read()
		if err != nil {
			return nil, fmt.Errorf("mtu: %w", err)
		}
		m := map[string]float64{
			MetricFragNeeded:  float64(c1.fragNeeded - c0.fragNeeded),
			MetricRetransSegs: float64(c1.retrans - c0.retrans),
			MetricUnreachRcvd: float64(c1.unreachRcv - c0.unreachRcv),
			MetricServerBytes: float64(c1.serverRx - c0.serverRx),
		}
		pmtu, learnt, err := pathMTUTo(pr.client.ns, pr.env.Path.Target)
		if err != nil {
			return nil, fmt.Errorf("mtu: %w", err)
		}
		m[MetricPMTU], m[MetricPMTULearnt] = float64(pmtu), 0
		if learnt {
			m[MetricPMTULearnt] = 1
		}
		return m, nil
	}, nil
}

// Measure implements scenario.Measurer: the engine's client as the suite
// runs it, bounded by the warm-up, the window and StallTimeout. A client
// stopped at the bound, or failing, gives a failed repeat ("stalled: …")
// that keeps the cell's counters; a measured one gets the path MTU it
// detected as metrics.
func (pr *prepared) Measure(ctx context.Context, c scenario.Cell, w scenario.Window) (*result.Result, error) {
	if pr.env.Run == nil || pr.env.Path.Client == nil {
		return nil, errors.New("mtu: no way to run the client (not run by the suite)")
	}
	target, _ := pr.env.Path.TargetArgs(c.Test)
	args := append(append([]string{"run"}, target...), "--test", c.Test, "--flows", strconv.Itoa(max(c.Flows, 1)),
		"--duration", w.Duration.String(), "--warmup", w.Warmup.String(), "--repeat", "1", "--format", "json", "-q")
	bound := w.Warmup + w.Duration + pr.stall
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t0 := time.Now()
	res, err := pr.env.Run(cctx, pr.env.Path.Client, args...)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case cctx.Err() != nil:
		return stalled(t0, fmt.Sprintf("the client gave no result within %s (warm-up, window and %s) and was stopped", bound, pr.stall)), nil
	case err != nil:
		return stalled(t0, err.Error()), nil
	case len(res.Repeats) == 1 && res.Repeats[0].Error != "":
		res.Repeats[0].Error = StalledPrefix + res.Repeats[0].Error
	}
	for i := range res.Repeats {
		if res.Repeats[i].Metrics == nil {
			continue
		}
		for k, v := range detectedMetrics(res.Config, pr.correct) {
			res.Repeats[i].Metrics[k] = v
		}
	}
	return res, nil
}

// stalled is the result of a cell whose client gave none: one failed
// repeat, to which the suite adds the cell's counters.
func stalled(start time.Time, why string) *result.Result {
	return &result.Result{
		Schema: result.SchemaResult, Tool: buildinfo.Tool(), Start: start.UTC(), Config: map[string]string{},
		Repeats: []result.Repeat{{Start: start.UTC(), DurationSec: time.Since(start).Seconds(), Error: StalledPrefix + why}},
	}
}
