package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/procfs"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/proof"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

// ensureAddrs gives the server pod DeniedAddr and UpdateAddr once per lab.
func (s *Scenario) ensureAddrs(ctx context.Context, lx *lab.Access) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared != nil && s.shared.topo == lx.Topology {
		return nil
	}
	if s.shared != nil {
		if err := s.closeAddrsLocked(ctx); err != nil {
			return err
		}
	}
	sh := &sharedAddrs{topo: lx.Topology}
	for _, a := range []netip.Addr{filter.DeniedAddr, UpdateAddr} {
		rm, err := lx.Topology.AddServerAddress(ctx, lx.Endpoint, a)
		if err != nil {
			for _, r := range sh.remove {
				_ = r(context.WithoutCancel(ctx))
			}
			return fmt.Errorf("give the server pod the probe address %s: %w", a, err)
		}
		sh.remove = append(sh.remove, rm)
	}
	s.shared = sh
	return nil
}

func (s *Scenario) closeAddrsLocked(ctx context.Context) error {
	if s.shared == nil {
		return nil
	}
	var errs []error
	for _, r := range s.shared.remove {
		errs = append(errs, r(context.WithoutCancel(ctx)))
	}
	s.shared = nil
	return errors.Join(errs...)
}

// Close removes the server's extra addresses.
func (s *Scenario) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeAddrsLocked(ctx)
}

// prepared is one loaded, proven filter.
type prepared struct {
	path    backend.Path // the cross-node path the cells run on
	f       filter.Filter
	metrics map[string]float64
	config  map[string]string
	closed  bool
}

func (p *prepared) Metrics() map[string]float64 { return p.metrics }
func (p *prepared) Config() map[string]string   { return p.config }

// Target is a cell's client and target (scenario.Targeter): the path's,
// with the handshake for UDPHandshakeCell.
func (p *prepared) Target(c scenario.Cell) (scenario.Target, error) { return cellTarget(p.path, c) }

// Close removes the filter and returns filter_teardown_seconds.
func (p *prepared) Close(ctx context.Context) (map[string]float64, error) {
	if p.closed {
		return nil, nil
	}
	p.closed = true
	t0 := time.Now()
	if err := p.f.Close(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("remove the filter: %w", err)
	}
	return map[string]float64{filter.TeardownSeconds: time.Since(t0).Seconds()}, nil
}

// Prepare loads the point's filter on the client's node and proves it: the
// deny set (Generate with the scenario's seed, N CIDRs, one covering
// DeniedAddr) is loaded while probes go to DeniedAddr and the server's
// ordinary address; then one /32 around UpdateAddr is added and removed,
// each proven the same way. The baseline mechanism none loads nothing and
// proves nothing.
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	if p.Skip != nil {
		return nil, fmt.Errorf("egress-filter: point %v is skipped: %w", p.Labels, p.Skip)
	}
	name, n, traversal, err := pointParams(p)
	if err != nil {
		return nil, err
	}
	m, ok := s.mech[name]
	if !ok {
		return nil, fmt.Errorf("egress-filter: mechanism %q is not one of this scenario's", name)
	}
	if ca, err := scenario.Access(env, scenario.ErrNeedsCluster, clusterDeployment.ClusterAccess); err == nil {
		return s.prepareCluster(ctx, ca, name, n, traversal)
	} else if env.Deployment != nil && !errors.Is(err, scenario.ErrNeedsCluster) {
		return nil, fmt.Errorf("egress-filter: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("egress-filter: %s is a cluster's policy layer: %w", name, scenario.ErrNeedsCluster)
	}
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("egress-filter: mechanism %s: %w", name, err)
	}
	ep := lx.Endpoint
	if ep.ClientNode == nil || ep.ClientNodeDev == "" || ep.Client == nil || ep.Server == nil {
		return nil, fmt.Errorf("egress-filter: the %s path has no client node to filter on (it needs a routed datapath, e.g. veth-routing)", ep.Kind)
	}
	if mi, err := os.ReadFile("/proc/meminfo"); err == nil {
		if avail, err := procfs.MemAvailable(string(mi)); err == nil {
			if err := checkMemory(name, n, avail); err != nil {
				return nil, fmt.Errorf("egress-filter: %w", err)
			}
		}
	}
	if err := s.ensureAddrs(ctx, lx); err != nil {
		return nil, err
	}
	cidrs, err := filter.Generate(s.o.Seed, n, filter.DeniedAddr)
	if err != nil {
		return nil, err
	}
	upd := netip.PrefixFrom(UpdateAddr, 32)
	for _, c := range cidrs {
		if c.Overlaps(upd) {
			return nil, fmt.Errorf("egress-filter: generated deny CIDR %s covers the update address %s", c, UpdateAddr)
		}
	}
	target := filter.Target{NSPath: ep.ClientNode.Path(), NSFd: ep.ClientNode.Fd(), Dev: ep.ClientNodeDev, Do: ep.ClientNode.Do}
	opts := filter.Options{EstablishedBypass: traversal == filter.TraversalNewConnection}
	probe := proof.Probe{ClientDo: ep.Client.Do, ServerDo: ep.Server.Do, Denied: filter.DeniedAddr, Allowed: ep.ServerIP,
		Warmup: probeWarmup(len(cidrs)), Interval: probeInterval}
	pr := &prepared{path: env.Path, metrics: map[string]float64{}, config: map[string]string{
		"filter_seed":          strconv.FormatUint(s.o.Seed, 10),
		"filter_rules":         strconv.Itoa(len(cidrs)),
		"filter_denied_addr":   filter.DeniedAddr.String(),
		"filter_update_prefix": upd.String(),
		"filter_target":        ep.ClientNode.Name + "/" + ep.ClientNodeDev,
	}}

	var info filter.LoadInfo
	load := func(ctx context.Context) error {
		f, li, err := m.Load(ctx, target, cidrs, opts)
		if err != nil {
			return fmt.Errorf("load %s with %d rules: %w", name, n, err)
		}
		pr.f, info = f, li
		return nil
	}
	if name == "none" {
		t0 := time.Now()
		if err := load(ctx); err != nil {
			return nil, err
		}
		pr.metrics[filter.SetupReturnedSeconds] = time.Since(t0).Seconds()
		pr.describe(info)
		return pr, nil
	}

	rssBefore, inProcRSS := procfs.ResetPeakRSS()
	enf, err := proof.MeasureEnforcement(ctx, probe, load)
	if err == nil && !enf.AllowedOK {
		err = fmt.Errorf("probes to the allowed address %s did not get through (%d of %d arrived)", ep.ServerIP, enf.AllowedArrived, enf.AllowedSent)
	}
	if err != nil {
		return nil, pr.fail(ctx, fmt.Errorf("prove %s with %d rules drops %s: %w", name, n, filter.DeniedAddr, err))
	}
	// The loader's RSS: an external program's peak, or the suite's own peak
	// growth during an in-process load; the larger when a mechanism does
	// both (ipset: the set over netlink, the rule with iptables-restore).
	loaderRSS, known := info.LoaderPeakRSS, info.LoaderPeakRSS > 0
	if inProcRSS {
		// VmRSS may read a few pages above VmHWM (the kernel syncs the
		// per-thread counters lazily): no growth counts as 0.
		if peak, ok := procfs.SelfStatusBytes("VmHWM:"); ok {
			loaderRSS, known = max(loaderRSS, peak-rssBefore, 0), true
		}
	}
	if known {
		pr.metrics[filter.LoaderRSSBytes] = float64(loaderRSS)
	}
	pr.metrics[filter.SetupSeconds] = enf.Enforced.Seconds()
	pr.metrics[filter.SetupReturnedSeconds] = enf.Returned.Seconds()
	pr.metrics[filter.SetupResolutionSeconds] = enf.Resolution.Seconds()
	pr.config["filter_probe_interval"] = enf.ProbeInterval.String()
	pr.describe(info)

	st, err := pr.f.Stats(ctx)
	if err != nil {
		return nil, pr.fail(ctx, fmt.Errorf("read %s counters: %w", name, err))
	}
	if st.Dropped == 0 {
		return nil, pr.fail(ctx, fmt.Errorf("%s with %d rules: probes to %s stopped arriving but the filter's drop counter is 0", name, n, filter.DeniedAddr))
	}
	if st.KernelBytesKnown {
		pr.metrics[filter.KernelBytes] = float64(st.KernelBytes)
	}

	up := probe
	up.Denied = UpdateAddr
	add, err := proof.MeasureEnforcement(ctx, up, func(ctx context.Context) error { return pr.f.Add(ctx, upd) })
	if err != nil {
		return nil, pr.fail(ctx, fmt.Errorf("prove %s drops %s after adding it to %d rules: %w", name, upd, n, err))
	}
	pr.metrics[filter.UpdateAddSeconds] = add.Enforced.Seconds()
	rel, err := proof.MeasureRelease(ctx, up, func(ctx context.Context) error { return pr.f.Remove(ctx, upd) })
	if err != nil {
		return nil, pr.fail(ctx, fmt.Errorf("prove %s lets %s through after removing it from %d rules: %w", name, upd, n+1, err))
	}
	pr.metrics[filter.UpdateRemoveSeconds] = rel.Released.Seconds()
	return pr, nil
}

func (p *prepared) describe(info filter.LoadInfo) {
	p.config["filter_traversal_built"] = info.Traversal
	p.config["filter_load_method"] = info.Method
	p.config["filter_load_batches"] = strconv.Itoa(info.Batches)
}

// fail removes a loaded filter and returns err (with the removal's error).
func (p *prepared) fail(ctx context.Context, err error) error {
	if p.f == nil {
		return err
	}
	if _, cerr := p.Close(ctx); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}
