package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/nftables"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/bpf/socklb"
	"github.com/cnibench/cnibench/internal/bpf/tclb"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

// ErrNotSupported is wrapped by the skip reason of an implementation this
// machine cannot run.
var ErrNotSupported = internal.ErrNotSupported

// iptables programs: kube-proxy runs iptables-restore, which is the nft
// backend on Debian 12.
const (
	iptRestore = "iptables-nft-restore"
	iptTimeout = 5 * time.Minute
)

// probe says why impl cannot run here, or nil.
func probe(impl string) error {
	switch impl {
	case ImplIPTables:
		if _, err := exec.LookPath(iptRestore); err != nil {
			return fmt.Errorf("%w: %s not found (install the Debian package iptables)", ErrNotSupported, iptRestore)
		}
		return nil
	case ImplSocketLB:
		return socklb.Probe()
	case ImplTCLB:
		return tclb.Probe()
	case ImplNone:
		return nil
	}
	return fmt.Errorf("unknown implementation %q", impl)
}

// state is what the scenario keeps across points: the backends' servers,
// started once per lab topology and stopped by Close.
type state struct {
	mu      sync.Mutex
	started map[*lab.Topology][]func()
}

// ensureBackends starts `cnibench serve` with service mode and HTTP in
// every backend pod of env's topology, once.
func (s *Scenario) ensureBackends(ctx context.Context, env scenario.Env, lx *lab.Access) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.started[lx.Topology]; ok {
		return nil
	}
	if env.Serve == nil {
		return errors.New("services: no way to start the backends (not run by the suite)")
	}
	if s.started == nil {
		s.started = map[*lab.Topology][]func(){}
	}
	// Timestamps without per-destination random offsets in the client
	// and backend pods: the socket LB connects to a backend and the
	// others to the VIP, so with random offsets a point's SYN could carry
	// an older timestamp than the previous point's connection on the same
	// four-tuple, whose TIME_WAIT socket on the backend then refuses it
	// (PAWS) for a 1 s SYN retransmission: one implementation's state
	// would slow the next one's.
	for _, pod := range lx.Topology.Pods {
		if pod.Role == lab.RoleClient1 || slices.ContainsFunc(backendPods, func(b backend.Pod) bool { return b.Role == pod.Role }) {
			if err := pod.NS.WriteSysctls([2]string{"net/ipv4/tcp_timestamps", "2"}); err != nil {
				return fmt.Errorf("timestamps in %s: %w", pod.Role, err)
			}
		}
	}
	var stops []func()
	for _, b := range backendPods {
		pod, ok := lx.Topology.Pod(b.Role)
		if !ok {
			for _, stop := range stops {
				stop()
			}
			return fmt.Errorf("backend pod %s is missing: the datapath builds no extra pods (use a routed datapath, e.g. veth-routing)", b.Role)
		}
		srv, err := env.Serve(ctx, pod.NS,
			"--listen", netip.AddrPortFrom(pod.IP, 12870).String(),
			"--service-listen", netip.AddrPortFrom(pod.IP, RRPort).String(),
			"--http-listen", netip.AddrPortFrom(pod.IP, HTTPPort).String(),
			"--max-flows", "8192")
		if err != nil {
			for _, stop := range stops {
				stop()
			}
			return fmt.Errorf("start the backend in %s: %w", b.Role, err)
		}
		stops = append(stops, srv.Stop)
	}
	s.started[lx.Topology] = stops
	return nil
}

// Close implements scenario.Scenario: it stops the backends.
func (s *Scenario) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, stops := range s.started {
		for _, stop := range stops {
			stop()
		}
	}
	s.started = nil
	return nil
}

// prepared is one point set up: the services loaded by one implementation.
type prepared struct {
	impl    string
	env     scenario.Env
	lab     *lab.Access
	metrics map[string]float64
	config  map[string]string
	// unload removes what the implementation loaded.
	unload func(context.Context) error
	// translations reads the eBPF implementation's forward counter.
	translations func() (uint64, error)
	// flush empties the implementation's own connection table before a
	// cell, as the suite flushes the kernel's conntrack (TC LB).
	flush  func() error
	closed bool
}

// Prepare implements scenario.Scenario: the backends (once), the service
// table of the point's size loaded by its implementation, then a proof:
// a short tcp_crr through the VIP must pass the checks every cell passes.
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	impl := p.Labels[LabelImplementation]
	n, err := strconv.Atoi(p.Labels[LabelServices])
	if err != nil {
		return nil, fmt.Errorf("services label %q: %w", p.Labels[LabelServices], err)
	}
	if impl == ImplCluster {
		ca, err := scenario.Access(env, scenario.ErrNeedsCluster, clusterDeployment.ClusterAccess)
		if err != nil {
			return nil, fmt.Errorf("services: %w", err)
		}
		return PrepareCluster(ctx, env, ca, n, s.cluster)
	}
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	if err := s.ensureBackends(ctx, env, lx); err != nil {
		return nil, err
	}
	pr := &prepared{impl: impl, env: env, lab: lx, metrics: map[string]float64{},
		config: map[string]string{"service_implementation": impl}}
	svcs := layout(n, backendIPs(), hairpinIP)
	t0 := time.Now()
	switch impl {
	case ImplNone:
		pr.config["service_load_method"] = "none: no service; the client takes the backends' addresses in turn"
	case ImplIPTables:
		err = pr.loadIPTables(ctx, svcs)
	case ImplSocketLB:
		err = pr.loadSocketLB(svcs)
	case ImplTCLB:
		err = pr.loadTCLB(svcs)
	default:
		err = fmt.Errorf("unknown implementation %q", impl)
	}
	if err != nil {
		return nil, errors.Join(err, pr.unloadAll(context.WithoutCancel(ctx)))
	}
	pr.metrics["svc_setup_seconds"] = time.Since(t0).Seconds()
	if err := pr.verify(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("proof before measuring: %w", err), pr.unloadAll(context.WithoutCancel(ctx)))
	}
	return pr, nil
}

func (p *prepared) Metrics() map[string]float64 { return p.metrics }
func (p *prepared) Config() map[string]string   { return p.config }

// Close implements scenario.Prepared: the implementation's state removed,
// timed (svc_teardown_seconds).
func (p *prepared) Close(ctx context.Context) (map[string]float64, error) {
	if p.closed {
		return nil, nil
	}
	p.closed = true
	t0 := time.Now()
	if err := p.unloadAll(ctx); err != nil {
		return nil, err
	}
	return map[string]float64{"svc_teardown_seconds": time.Since(t0).Seconds()}, nil
}

func (p *prepared) unloadAll(ctx context.Context) error {
	if p.unload == nil {
		return nil
	}
	err := p.unload(ctx)
	p.unload = nil
	return err
}

// Target implements scenario.Targeter.
func (p *prepared) Target(c scenario.Cell) (scenario.Target, error) {
	role, args, err := target(p.impl, c)
	if err != nil {
		return scenario.Target{}, err
	}
	pod, ok := p.lab.Topology.Pod(role)
	if !ok {
		return scenario.Target{}, fmt.Errorf("services: client pod %s is missing", role)
	}
	return scenario.Target{Client: pod.NS, Args: args}, nil
}

// loadIPTables loads kube-proxy's rules into both nodes (kube-proxy runs
// on every node; the client's node translates).
func (p *prepared) loadIPTables(ctx context.Context, svcs []Service) error {
	rules, err := KubeProxyRules(svcs)
	if err != nil {
		return err
	}
	p.unload = func(ctx context.Context) error {
		var errs []error
		for _, node := range p.lab.Topology.Nodes {
			errs = append(errs, deleteNatTable(node))
		}
		return errors.Join(errs...)
	}
	// Both nodes at once, as every node's kube-proxy syncs on its own.
	errs := make(chan error, len(p.lab.Topology.Nodes))
	for _, node := range p.lab.Topology.Nodes {
		go func() {
			if err := runIn(ctx, node, rules, iptRestore, "--noflush"); err != nil {
				errs <- fmt.Errorf("load %d services into %s: %w", len(svcs), node.Name, err)
				return
			}
			errs <- nil
		}()
	}
	var all []error
	for range p.lab.Topology.Nodes {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	p.config["service_load_method"] = iptRestore + " --noflush on both nodes at once"
	p.config["service_rules_bytes"] = strconv.Itoa(len(rules))
	return nil
}

// deleteNatTable removes the ip nat table iptables-nft created in node.
func deleteNatTable(node *lab.NS) error {
	c, err := nftables.New(nftables.WithNetNSFd(node.Fd()))
	if err != nil {
		return fmt.Errorf("nftables in %s: %w", node.Name, err)
	}
	defer c.CloseLasting()
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("list tables in %s: %w", node.Name, err)
	}
	for _, t := range tables {
		if t.Name == "nat" {
			c.DelTable(t)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete the nat table in %s: %w", node.Name, err)
	}
	return nil
}

// runIn runs prog in ns with stdin.
func runIn(ctx context.Context, ns *lab.NS, stdin []byte, prog string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, iptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = bytes.NewReader(stdin), &stderr
	if err := ns.Do(cmd.Start); err != nil {
		return fmt.Errorf("start %s: %w", prog, err)
	}
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return fmt.Errorf("%s: %w: %s", prog, err, msg)
	}
	return nil
}

// bpfServices converts the table for the eBPF implementations.
func sockServices(svcs []Service) []socklb.Service {
	out := make([]socklb.Service, 0, len(svcs))
	for _, s := range svcs {
		out = append(out, socklb.Service{VIP: netip.AddrPortFrom(s.VIP, s.Port), Backends: slices.Clone(s.Endpoints)})
	}
	return out
}

func (p *prepared) loadSocketLB(svcs []Service) error {
	if p.lab.Cgroup == "" {
		return fmt.Errorf("%w: no cgroup v2 directory for the clients (socket LB attaches there)", ErrNotSupported)
	}
	lb, err := socklb.Load(sockServices(svcs))
	if err != nil {
		return fmt.Errorf("load the socket LB with %d services: %w", len(svcs), err)
	}
	p.unload = func(context.Context) error { return lb.Close() }
	if err := lb.Attach(p.lab.Cgroup); err != nil {
		return err
	}
	p.translations = func() (uint64, error) {
		c, err := lb.Counters()
		return c.Forward, err
	}
	p.config["service_load_method"] = "BPF map batch update; cgroup connect4/sendmsg4/recvmsg4/getpeername4 on " + p.lab.Cgroup
	return nil
}

func (p *prepared) loadTCLB(svcs []Service) error {
	ts := make([]tclb.Service, 0, len(svcs))
	for _, s := range svcs {
		ts = append(ts, tclb.Service{VIP: netip.AddrPortFrom(s.VIP, s.Port), Proto: tclb.TCP, Backends: slices.Clone(s.Endpoints)})
	}
	lb, err := tclb.Load(ts, 0)
	if err != nil {
		return fmt.Errorf("load the TC LB with %d services: %w", len(svcs), err)
	}
	p.unload = func(context.Context) error { return lb.Close() }
	// On the node-side veth of every client pod (Cilium's from-container
	// hook): client1's and the hairpin client's, both on node 1.
	var devs []string
	for _, role := range []string{lab.RoleClient1, hairpinRole} {
		pod, ok := p.lab.Topology.Pod(role)
		if !ok || pod.HostDev == "" {
			return fmt.Errorf("services: pod %s has no node-side device", role)
		}
		node := p.lab.Topology.Nodes[pod.Node]
		if err := lb.Attach(node.Do, pod.HostDev); err != nil {
			return err
		}
		devs = append(devs, pod.HostDev)
	}
	p.translations = func() (uint64, error) {
		c, err := lb.Counters()
		return c.New, err
	}
	p.flush = func() error {
		_, err := lb.Flush()
		return err
	}
	p.config["service_load_method"] = fmt.Sprintf("BPF map batch update (Maglev M=%d); TCX ingress/egress on %s", tclb.DefaultMaglevSize, strings.Join(devs, ","))
	return nil
}
