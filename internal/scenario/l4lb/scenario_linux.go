package l4lb

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/bpf/nscpu"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/procfs"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/l4lb/lbnet"
	"github.com/cnibench/cnibench/pkg/result"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

// state is what the scenario keeps across points: the backends' servers
// and the CPU accountant, started at the first Prepare, released by Close.
type state struct {
	mu      sync.Mutex
	servers []*scenario.Server // backend i's server: servers[i]
	acct    *nscpu.Accountant
	acctErr error
}

// ensure starts the backends' servers and the accountant once.
func (s *Scenario) ensure(ctx context.Context, env scenario.Env, lb *lbnet.LB) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers == nil {
		if env.Serve == nil {
			return errors.New("l4lb: no way to start the backends (not run by the suite)")
		}
		for _, b := range lb.Backends() {
			srv, err := env.Serve(ctx, b.NS,
				"--listen", netip.AddrPortFrom(b.IP, engine.DefaultPort).String(),
				"--service-listen", netip.AddrPortFrom(b.IP, RRPort).String(),
				"--http-listen", netip.AddrPortFrom(b.IP, HTTPPort).String(),
				"--max-flows", "8192")
			if err != nil {
				s.stopLocked()
				return fmt.Errorf("start the backend in %s: %w", b.Role, err)
			}
			s.servers = append(s.servers, srv)
		}
	}
	if s.acct == nil && s.acctErr == nil {
		// Per-node CPU is reported when the kernel can account it; its
		// absence is said in the config, never guessed.
		s.acct, s.acctErr = nscpu.Start()
	}
	return nil
}

func (s *Scenario) stopLocked() {
	for _, srv := range s.servers {
		srv.Stop()
	}
	s.servers = nil
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	var err error
	if s.acct != nil {
		err = s.acct.Close()
		s.acct = nil
	}
	return err
}

// prepared is one mode configured.
type prepared struct {
	s    *Scenario
	env  scenario.Env
	lb   *lbnet.LB
	mode lbnet.Mode
	spec pointSpec
	// floodCPU is the flood sender's CPU (-1: not pinned).
	floodCPU int
	metrics  map[string]float64
	config   map[string]string
	// nodes are the network namespace inodes of each node and its pods.
	lbNode  []uint64
	workers [2][]uint64
}

// Prepare implements scenario.Scenario: the backends (once), the mode
// configured (timed), then a short http run through the VIP that must
// pass the proof every cell passes.
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("l4lb: %w", err)
	}
	d, ok := lx.Datapath.(*lbnet.Datapath)
	if !ok || d.LB() == nil {
		return nil, fmt.Errorf("l4lb: runs on the %s datapath, not %T", lbnet.DatapathName, lx.Datapath)
	}
	lb := d.LB()
	if err := s.ensure(ctx, env, lb); err != nil {
		return nil, err
	}
	spec := specOf(p)
	pr := &prepared{s: s, env: env, lb: lb, mode: spec.mode, spec: spec, floodCPU: -1, metrics: map[string]float64{},
		config: map[string]string{"lb_mode_label": spec.mode.String(), "lb_packet_path": spec.mode.PacketPath()}}
	if s.acct == nil {
		pr.config["node_cpu"] = "not measured: " + s.acctErr.Error()
	}
	if err := pr.inodes(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := lb.Configure(ctx, pr.mode); err != nil {
		return nil, fmt.Errorf("configure %s: %w", pr.mode, err)
	}
	pr.metrics["lb_configure_seconds"] = time.Since(t0).Seconds()
	if err := pr.placeCPUs(); err != nil {
		return nil, err
	}
	if err := pr.verify(ctx); err != nil {
		return nil, fmt.Errorf("proof before measuring %s: %w", pr.mode, err)
	}
	return pr, nil
}

// inodes finds the namespaces each node's CPU is charged from: the LB
// node; each worker with its backend pod.
func (p *prepared) inodes() error {
	ino := func(ns *lab.NS) (uint64, error) { return nscpu.NetnsInode(ns.Fd()) }
	n, err := ino(p.lb.LBNode())
	if err != nil {
		return err
	}
	p.lbNode = []uint64{n}
	for i, w := range p.lb.Workers() {
		n, err := ino(w)
		if err != nil {
			return err
		}
		p.workers[i] = []uint64{n}
	}
	for _, b := range p.lb.Backends() {
		n, err := ino(b.NS)
		if err != nil {
			return err
		}
		p.workers[b.Node] = append(p.workers[b.Node], n)
	}
	return nil
}

func (p *prepared) Metrics() map[string]float64 { return p.metrics }
func (p *prepared) Config() map[string]string   { return p.config }

// Close implements scenario.Prepared: the next point configures its own
// mode; the lab's Down removes the programs.
func (p *prepared) Close(context.Context) (map[string]float64, error) { return nil, nil }

// Target implements scenario.Targeter: the external client to the VIP.
func (p *prepared) Target(c scenario.Cell) (scenario.Target, error) {
	args, err := targetArgs(c, p.lb.VIP())
	if err != nil {
		return scenario.Target{}, err
	}
	return scenario.Target{Client: p.lb.Client(), Args: args}, nil
}

func (p *prepared) snapshot() (snapshot, error) {
	sn := snapshot{at: time.Now()}
	c, err := p.lb.Counters()
	if err != nil {
		return sn, err
	}
	sn.counters = c
	if p.mode.LB == lbnet.KubeProxy {
		if sn.ct, err = lab.ConntrackStats(p.lb.LBNode()); err != nil {
			return sn, err
		}
	}
	if p.s.acct != nil {
		if sn.cpu, err = p.s.acct.Read(); err != nil {
			return sn, err
		}
	}
	for _, srv := range p.s.servers {
		st, err := procfs.ReadStat(srv.PID)
		if err != nil {
			return sn, fmt.Errorf("backend CPU: %w", err)
		}
		sn.procs = append(sn.procs, procfs.Duration(st.Ticks()))
	}
	return sn, nil
}

// BeginCell implements scenario.Checker: the refused client connects to
// the VIP for the whole cell, and the cell's counters and CPU are taken.
func (p *prepared) BeginCell(c scenario.Cell) (func() (map[string]float64, error), error) {
	before, err := p.snapshot()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	type probeResult struct {
		r   lbnet.RefusalResult
		err error
	}
	done := make(chan probeResult, 1)
	go func() {
		r, err := p.lb.RefusalProbe(ctx, time.Hour)
		done <- probeResult{r, err}
	}()
	stopFlood := p.startFlood()
	return func() (map[string]float64, error) {
		fr, ferr := stopFlood()
		after, err := p.snapshot()
		cancel()
		pr := <-done
		if err != nil {
			return nil, err
		}
		if ferr != nil {
			return nil, ferr
		}
		if pr.err != nil && !errors.Is(pr.err, context.Canceled) {
			return nil, fmt.Errorf("refusal probe: %w", pr.err)
		}
		m := cellMetrics(before, after, pr.r, p.lbNode, p.workers)
		addFloodMetrics(m, fr)
		if p.mode.LB == lbnet.KubeProxy {
			n, err := p.lb.ConntrackVIPEntries()
			if err != nil {
				return nil, err
			}
			m[MetricCTVIPEntries] = float64(n)
		}
		return m, checkCell(p.mode, m)
	}, nil
}

// verify runs 300 ms of http through the VIP as a cell and checks it.
func (p *prepared) verify(ctx context.Context) error {
	if p.env.Run == nil {
		return errors.New("l4lb: no way to run a client (not run by the suite)")
	}
	c := scenario.Cell{Test: engine.HTTP, Flows: 100, Path: PathNorthSouth}
	t, err := p.Target(c)
	if err != nil {
		return err
	}
	end, err := p.BeginCell(c)
	if err != nil {
		return err
	}
	args := append([]string{"run", "--test", c.Test, "--flows", "100", "--duration", "300ms", "--warmup", "0s", "--repeat", "1", "--format", "json", "-q"}, t.Args...)
	res, err := p.env.Run(ctx, t.Client, args...)
	if err != nil {
		_, _ = end()
		return err
	}
	if _, err := end(); err != nil {
		return err
	}
	if len(res.Repeats) == 0 || res.Repeats[0].Metrics[result.TransPerSec] <= 0 {
		return errors.New("no request through the VIP")
	}
	return nil
}
