package incluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/procfs"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/pkg/result"
)

// The mechanisms a cluster's own policy layer provides (the seed's actual
// experiment: the CNI's policy objects against the raw kernel mechanisms
// on the same nodes).
const (
	// MechNetworkPolicy is standard networking.k8s.io/v1 NetworkPolicy:
	// the client pod's egress allowed everywhere except the deny set.
	MechNetworkPolicy = "networkpolicy"
	// MechCiliumPolicy is CiliumClusterwideNetworkPolicy egressDeny.
	MechCiliumPolicy = "cilium-policy"
	// MechCalicoNetworkSet is Calico's GlobalNetworkSet referenced by a
	// GlobalNetworkPolicy deny rule.
	MechCalicoNetworkSet = "calico-networkset"
)

// PolicyMechanisms are the cluster's policy mechanisms, in report order.
var PolicyMechanisms = []string{MechNetworkPolicy, MechCiliumPolicy, MechCalicoNetworkSet}

// IsPolicyMechanism reports the mechanisms of a cluster's policy layer.
func IsPolicyMechanism(name string) bool {
	return name == MechNetworkPolicy || name == MechCiliumPolicy || name == MechCalicoNetworkSet
}

// Cluster bounds (Options.MaxRules): a deny set of 10 000 CIDRs is
// one NetworkPolicy of about 200 KB (one GlobalNetworkSet, one CCNP), which
// any API server takes; seed 004 saw Cilium fail near 100 000 rules and
// Calico's agent crash-loop on large GlobalNetworkSets, so more is run
// only when the user says the cluster may take it (--cluster-scale). The
// scaled bound lies past Calico's default ipset size (Felix's MaxIpsetSize,
// 1 048 576 entries), so that a sweep can reach the limit seed 004 reports
// and record what the CNI does there (1 000 000 CIDRs were 32 NetworkPolicy
// chunks and 21 GlobalNetworkSets on real Calico, cnibench's own peak RSS
// 248 MiB: docs/data/scale-2026-12-05).
const (
	DefaultClusterMaxRules = 10_000
	ScaleClusterMaxRules   = 2_000_000
)

// Metrics of a cluster point besides the filter_* ones.
const (
	MetricPolicyObjects = "policy_objects"
	MetricPolicyBytes   = "policy_bytes"
	MetricCNICPU        = "cni_cpu_millicores"
	MetricCNIMemory     = "cni_memory_bytes"
)

// Metrics documents them (docs/results.md mirrors them).
var Metrics = map[string]result.MetricInfo{
	MetricPolicyObjects: {Unit: "objects", Better: result.LowerIsBetter, Help: "egress-filter scenario on a cluster: policy objects the point's deny set was sent as (each within the API server's request limit, --policy-chunk)"},
	MetricPolicyBytes:   {Unit: "bytes", Better: result.LowerIsBetter, Help: "egress-filter scenario on a cluster: bytes of those objects as sent (their JSON)"},
	MetricCNICPU:        {Unit: "millicores", Better: result.LowerIsBetter, Help: "egress-filter scenario on a cluster: CPU of the CNI's pods on the run's two nodes (cgroups) while the point's policy objects were created, in thousandths of a core; the window is the API calls, not the agents' programming after them until the deny held"},
	MetricCNIMemory:     {Unit: "bytes", Better: result.LowerIsBetter, Help: "egress-filter scenario on a cluster: working set of the CNI's pods on the run's two nodes right after the point's policy objects were created"},
}

// Options configure the scenario's points on a cluster.
type Options struct {
	// Chunk is the most deny CIDRs in one policy object (0:
	// kube.DefaultPolicyChunk).
	Chunk int
	// MaxRules refuses larger points as too large (0:
	// DefaultClusterMaxRules).
	MaxRules int
	// Wait bounds each proof (0: a minute).
	Wait time.Duration
	// Denied and Allowed, when valid, are two `cnibench serve` outside
	// the cluster that every point uses instead of the run's server pods:
	// the deny covers Denied, the cells run against Allowed. A CNI whose
	// CIDR rules do not select cluster endpoints (Cilium) enforces the
	// seed's deny only on such addresses.
	Denied, Allowed netip.AddrPort
}

// Outside reports whether the points use servers outside the cluster.
func (o Options) Outside() bool { return o.Denied.IsValid() }

// outsideName names a server outside the cluster where a pod's name goes.
const outsideName = "outside the cluster"

// targets is ca with the points' two destinations: the run's server pods,
// or the servers outside the cluster.
func (o Options) targets(ca *cluster.Access) *cluster.Access {
	if !o.Outside() {
		return ca
	}
	c := *ca
	c.Other = cluster.ServerPod{Name: outsideName, IP: o.Denied.Addr().String(), Port: int(o.Denied.Port())}
	c.Allowed = cluster.ServerPod{Name: outsideName, IP: o.Allowed.Addr().String(), Port: int(o.Allowed.Port())}
	return &c
}

// ParseOutside checks --egress-denied and --egress-allowed: both or
// neither, each an IP:PORT, two different addresses of one family (the
// deny set holds the denied address as a host prefix, and the allowed
// one must stay outside it).
func ParseOutside(denied, allowed string) (netip.AddrPort, netip.AddrPort, error) {
	if denied == "" && allowed == "" {
		return netip.AddrPort{}, netip.AddrPort{}, nil
	}
	if denied == "" || allowed == "" {
		return netip.AddrPort{}, netip.AddrPort{}, errors.New("--egress-denied and --egress-allowed: give both (two `cnibench serve` outside the cluster) or neither")
	}
	var out [2]netip.AddrPort
	for i, f := range []struct{ flag, v string }{{"--egress-denied", denied}, {"--egress-allowed", allowed}} {
		ap, err := netip.ParseAddrPort(f.v)
		if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" || ap.Addr().IsUnspecified() {
			return netip.AddrPort{}, netip.AddrPort{}, fmt.Errorf("%s %q: want IP:PORT of a `cnibench serve` outside the cluster, e.g. 198.18.0.10:7000", f.flag, f.v)
		}
		out[i] = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	switch {
	case out[0].Addr().Is4() != out[1].Addr().Is4():
		return netip.AddrPort{}, netip.AddrPort{}, fmt.Errorf("--egress-denied %s and --egress-allowed %s: want one address family", out[0], out[1])
	case out[0].Addr() == out[1].Addr():
		return netip.AddrPort{}, netip.AddrPort{}, fmt.Errorf("--egress-denied and --egress-allowed: both are %s; the deny would cut the allowed server, give two addresses", out[0].Addr())
	}
	return out[0], out[1], nil
}

// WithDefaults returns o with its zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Chunk <= 0 {
		o.Chunk = kube.DefaultPolicyChunk
	}
	if o.MaxRules <= 0 {
		o.MaxRules = DefaultClusterMaxRules
	}
	if o.Wait <= 0 {
		o.Wait = time.Minute
	}
	return o
}

// A proof's wait grows with the deny set (ProofWait): a CNI programs a
// million CIDRs in minutes where it programs a thousand in a second, and
// a point must fail only when the deny did not hold in time, not for the
// time the API server and the agent need to take the objects in.
const (
	// WaitPerRule is the wait a proof allows per deny CIDR: 600 µs, so
	// 1 minute at 100 000 and 10 minutes at 1 000 000.
	WaitPerRule = 600 * time.Microsecond
	// MaxProofWait bounds every proof's wait (--policy-wait's own bound).
	MaxProofWait = 30 * time.Minute
)

// ProofWait is the wait of a proof with n deny CIDRs: Wait (--policy-wait),
// or WaitPerRule × n when that is longer, at most MaxProofWait.
func (o Options) ProofWait(n int) time.Duration {
	o = o.WithDefaults()
	return max(o.Wait, min(time.Duration(n)*WaitPerRule, MaxProofWait))
}

// Watch parameters of a cluster proof: a probe every 2 ms (the resolution
// of the set-up time: the seed polled every 1 ms), each with 300 ms to
// connect, the new state confirmed for a second.
const (
	watchInterval = 2 * time.Millisecond
	watchTimeout  = 300 * time.Millisecond
	watchConfirm  = time.Second
)

// DenySet is the deny set of a cluster point with n rules: n−1
// generated CIDRs in 240.0.0.0/4 (Generate with the scenario's seed) and
// the other server pod's address as a /32, the real destination whose
// refusal proves enforcement.
func DenySet(seed uint64, n int, denied, allowed netip.Addr) ([]netip.Prefix, error) {
	if n < 1 {
		return nil, fmt.Errorf("rules %d: must be at least 1", n)
	}
	var cidrs []netip.Prefix
	if n > 1 {
		g, err := filter.Generate(seed, n-1, filter.DeniedAddr)
		if err != nil {
			return nil, err
		}
		cidrs = g
	}
	cidrs = append(cidrs, netip.PrefixFrom(denied, denied.BitLen()))
	for _, c := range cidrs {
		if c.Contains(allowed) {
			return nil, fmt.Errorf("the deny set's %s covers the allowed server %s", c, allowed)
		}
	}
	return cidrs, nil
}

// PrepareNone is the baseline point on a cluster: nothing loaded, the
// cells run in the client pod against the allowed server.
func PrepareNone(ca *cluster.Access, o Options) scenario.Prepared {
	a := o.targets(ca).Allowed
	return &clusterNone{target: scenario.Target{Client: ca.Client,
		Args: []string{"--target", net.JoinHostPort(a.IP, strconv.Itoa(a.Port))}}}
}

// clusterNone is the baseline on a cluster: nothing loaded.
type clusterNone struct{ target scenario.Target }

func (p *clusterNone) Metrics() map[string]float64 { return map[string]float64{} }
func (p *clusterNone) Config() map[string]string {
	return map[string]string{"filter_load_method": "none"}
}
func (p *clusterNone) Close(context.Context) (map[string]float64, error) { return nil, nil }
func (p *clusterNone) Target(scenario.Cell) (scenario.Target, error)     { return p.target, nil }

// clusterPolicy is one cluster policy point prepared: its objects created
// and proven enforced.
type clusterPolicy struct {
	ca      *cluster.Access
	mech    string
	wait    time.Duration
	remove  func(ctx context.Context) error
	metrics map[string]float64
	config  map[string]string
	closed  bool
}

func (p *clusterPolicy) Metrics() map[string]float64 { return p.metrics }
func (p *clusterPolicy) Config() map[string]string   { return p.config }

// Target: the cells run in the client pod against the allowed server.
func (p *clusterPolicy) Target(scenario.Cell) (scenario.Target, error) {
	return scenario.Target{Client: p.ca.Client, Args: []string{"--target", net.JoinHostPort(p.ca.Allowed.IP, strconv.Itoa(p.ca.Allowed.Port))}}, nil
}

// Close removes the policy objects and returns filter_teardown_seconds:
// the time from the deletion's start until the denied server answers
// again.
func (p *clusterPolicy) Close(ctx context.Context) (map[string]float64, error) {
	if p.closed {
		return nil, nil
	}
	p.closed = true
	ctx = context.WithoutCancel(ctx)
	w, err := p.ca.Watch(ctx, watchOptions(p.ca, agent.WantAnswers, p.wait), p.remove)
	if err != nil {
		return nil, fmt.Errorf("remove the %s objects: %w", p.mech, err)
	}
	return map[string]float64{filter.TeardownSeconds: w.AfterSeconds}, nil
}

// NotEnforcedError is a cluster point whose deny was not enforced: the
// objects were accepted, the denied server kept answering.
type NotEnforcedError struct {
	Mechanism string
	Rules     int
	Evidence  string
}

func (e *NotEnforcedError) Error() string {
	return fmt.Sprintf("%s with %d rules: %s", e.Mechanism, e.Rules, e.Evidence)
}

func (e *NotEnforcedError) Unwrap() error { return scenario.ErrNotEnforced }

// PreparePolicy sets up one point of a cluster policy mechanism:
// the deny set (DenySet) as the mechanism's objects, created while
// the client pod probes the denied server pod every 2 ms (agent watch): the
// set-up time is from the first create until that server stopped
// answering for good, while the allowed server kept answering. A cluster
// that does not serve the mechanism's resources skips the point (wrapping
// scenario.ErrNeedsCluster's backend.ErrNotSupported); one that accepts the
// objects but does not enforce them fails it with a NotEnforcedError (the
// suite records "not enforced"), its objects removed.
func PreparePolicy(ctx context.Context, ca *cluster.Access, mech string, n int, seed uint64, o Options) (scenario.Prepared, error) {
	o = o.WithDefaults()
	ca = o.targets(ca)
	if n > o.MaxRules {
		return nil, fmt.Errorf("%w: %s with %d rules: a cluster point is bounded at %d rules; pass --cluster-scale if the cluster may take up to %d",
			scenario.ErrTooLarge, mech, n, o.MaxRules, ScaleClusterMaxRules)
	}
	denied, err := netip.ParseAddr(ca.Other.IP)
	if err != nil {
		return nil, fmt.Errorf("the denied server (%s) has no address: %w", ca.Other.Name, err)
	}
	allowed, err := netip.ParseAddr(ca.Allowed.IP)
	if err != nil {
		return nil, fmt.Errorf("the allowed server (%s) has no address: %w", ca.Allowed.Name, err)
	}
	// cnibench's own peak RSS from here (the deny set built, its objects
	// built one by one and sent) until the deny is proven.
	_, rssOK := procfs.ResetPeakRSS()
	var win *cluster.CNILogWindow
	if ca.CNILogs != nil {
		win = ca.CNILogs(ctx)
	}
	cidrs, err := DenySet(seed, n, denied, allowed)
	if err != nil {
		return nil, err
	}
	nCIDRs := len(cidrs)
	// Normalised once here (a sorted copy; the generated set is dropped),
	// the builders take it as it is.
	if cidrs, err = kube.NormalizeDeny(cidrs); err != nil {
		return nil, err
	}
	name := "cnb-" + ca.RunID + "-deny"
	objs, err := buildPolicyObjects(ctx, ca, mech, name, cidrs, o.Chunk)
	if err != nil {
		return nil, err
	}
	cidrs = nil // the objects hold what they need
	// A cluster whose admission refuses the objects skips the point
	// before anything is created or watched.
	if err := cluster.Admit(ctx, ca.Clientset, objs.dryRun); err != nil {
		return nil, fmt.Errorf("%s with %d rules: %w", mech, n, err)
	}
	wait := o.ProofWait(n)
	p := &clusterPolicy{ca: ca, mech: mech, wait: wait, remove: objs.remove, metrics: map[string]float64{}, config: map[string]string{
		"filter_seed":         strconv.FormatUint(seed, 10),
		"filter_rules":        strconv.Itoa(nCIDRs),
		"filter_denied_addr":  denied.String() + " (" + ca.Other.Name + ")",
		"filter_allowed_addr": allowed.String() + " (" + ca.Allowed.Name + ")",
		"filter_target":       "the client pod's egress, through the cluster's policy layer",
		"filter_load_method":  objs.describe,
		"filter_chunk":        strconv.Itoa(o.Chunk),
		"filter_proof_wait":   wait.String(),
	}}
	var returned time.Duration
	var objects, bytes int
	var usage map[string]float64
	var why string
	var createErr error
	w, err := ca.Watch(ctx, watchOptions(ca, agent.WantRefused, wait), func(ctx context.Context) error {
		var err error
		usage, why, err = ca.CNIUsage(ctx, func(ctx context.Context) error {
			t0 := time.Now()
			objects, bytes, createErr = objs.create(ctx)
			returned = time.Since(t0)
			return createErr
		})
		return err
	})
	fail := failure{ctx: ctx, win: win, mech: mech, n: n, sent: func() (int, int) { return objects, bytes }, total: objs.count, remove: objs.remove}
	lost := w.AllowedProbes - w.AllowedAnswered
	switch {
	case ctx.Err() != nil:
		return nil, errors.Join(fmt.Errorf("load %s with %d rules: %w", mech, n, ctx.Err()), removeAll(ctx, objs.remove))
	case err == nil && lost > 0 && !w.AllowedEndAnswered:
		// Unanswered at the end of the proof: the allowed server may be
		// cut for good (misses followed by answers are a passing cut
		// while the CNI installs the policy, recorded below).
		return fail.with(fmt.Errorf("%s with %d rules also cut the allowed server %s: %d of %d probes answered, and it did not answer again within %s (the deny took effect %.3fs after the first create)",
			mech, n, w.Allowed, w.AllowedAnswered, w.AllowedProbes, wait, w.AfterSeconds))
	case err != nil && createErr == nil && w.Schema == agent.SchemaWatch && w.Error == "" && w.Before && !w.Changed && w.Probes > 0 && w.Answered == w.Probes:
		// Accepted, never enforced: the CNI ignores the objects (or
		// could not program them within the wait: the CNI's log says).
		ev := fmt.Sprintf("the API server accepted %d object(s) (%d bytes) in %.2fs, but %s (%s) answered %d of %d probes over the next %s",
			objects, bytes, returned.Seconds(), w.Target, ca.Other.Name, w.Answered, w.Probes, wait)
		return fail.with(&NotEnforcedError{Mechanism: mech, Rules: n, Evidence: ev})
	case err != nil:
		return fail.with(fmt.Errorf("load %s with %d rules: %w", mech, n, err))
	}
	if ev := win.Restarts(ctx); ev.Restarts > 0 {
		// Enforced, but the CNI's agent did not take the load whole.
		return fail.with(fmt.Errorf("%s with %d rules: the deny took effect %.3fs after the first create, but the CNI's pods restarted %d time(s) meanwhile",
			mech, n, w.AfterSeconds, ev.Restarts))
	}
	p.metrics[filter.SetupSeconds] = w.AfterSeconds
	p.metrics[filter.SetupReturnedSeconds] = returned.Seconds()
	p.metrics[filter.SetupResolutionSeconds] = w.ResolutionSeconds
	p.metrics[filter.SetupAllowedLost] = float64(lost)
	if lost > 0 {
		p.config["filter_allowed_cut"] = fmt.Sprintf("%d of %d probes of the allowed server unanswered while the deny went in, the last %.3fs after the first create (the deny took effect at %.3fs); answered again by the end of the proof",
			lost, w.AllowedProbes, w.AllowedLastMissSeconds, w.AfterSeconds)
	}
	p.metrics[MetricPolicyObjects] = float64(objects)
	p.metrics[MetricPolicyBytes] = float64(bytes)
	if peak, ok := procfs.SelfStatusBytes("VmHWM:"); ok && rssOK {
		p.metrics[filter.SuitePeakRSSBytes] = float64(peak)
	}
	maps.Copy(p.metrics, usageMetrics(usage))
	if why != "" {
		p.config["cni_usage"] = why
	}
	p.config["filter_probe_interval"] = watchInterval.String()
	return p, nil
}

// usageMetrics names the CNI's usage during programming.
func usageMetrics(u map[string]float64) map[string]float64 {
	out := map[string]float64{}
	if v, ok := u["cni_cpu_millicores"]; ok {
		out[MetricCNICPU] = v
	}
	if v, ok := u["cni_memory_bytes"]; ok {
		out[MetricCNIMemory] = v
	}
	return out
}

func removeAll(ctx context.Context, remove func(context.Context) error) error {
	if err := remove(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("remove what was created: %w", err)
	}
	return nil
}

// watchOptions are a cluster proof's watch of the other server pod.
func watchOptions(ca *cluster.Access, want string, wait time.Duration) agent.WatchOptions {
	return proofWatch(net.JoinHostPort(ca.Other.IP, strconv.Itoa(ca.Other.Port)),
		net.JoinHostPort(ca.Allowed.IP, strconv.Itoa(ca.Allowed.Port)), want, wait)
}

// proofWatch is a proof's watch of the denied server (the allowed one must
// keep answering while a deny goes in), in the client pod or in-process.
func proofWatch(denied, allowed, want string, wait time.Duration) agent.WatchOptions {
	o := agent.WatchOptions{Target: denied, Want: want,
		Interval: watchInterval, ProbeTimeout: watchTimeout, Wait: wait, Confirm: watchConfirm}
	if want == agent.WantRefused {
		o.Allowed = allowed
	}
	return o
}
