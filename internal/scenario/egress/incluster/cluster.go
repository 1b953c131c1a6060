package incluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/preflight"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
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
// only when the user says the cluster may take it (--cluster-scale).
const (
	DefaultClusterMaxRules = 10_000
	ScaleClusterMaxRules   = 1_000_000
)

// Metrics of a cluster point besides the filter_* ones.
const (
	MetricPolicyObjects = "policy_objects"
	MetricPolicyBytes   = "policy_bytes"
	MetricCNICPU        = "cni_cpu_millicores"
	MetricCNIMemory     = "cni_memory_bytes"
)

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
	cidrs, err := DenySet(seed, n, denied, allowed)
	if err != nil {
		return nil, err
	}
	name := "cnb-" + ca.RunID + "-deny"
	create, remove, describe, dryRun, err := policyObjects(ctx, ca, mech, name, cidrs, o.Chunk)
	if err != nil {
		return nil, err
	}
	// A cluster whose admission refuses the objects skips the point
	// before anything is created or watched.
	if err := cluster.Admit(ctx, ca.Clientset, dryRun); err != nil {
		return nil, fmt.Errorf("%s with %d rules: %w", mech, n, err)
	}
	p := &clusterPolicy{ca: ca, mech: mech, wait: o.Wait, remove: remove, metrics: map[string]float64{}, config: map[string]string{
		"filter_seed":         strconv.FormatUint(seed, 10),
		"filter_rules":        strconv.Itoa(len(cidrs)),
		"filter_denied_addr":  denied.String() + " (" + ca.Other.Name + ")",
		"filter_allowed_addr": allowed.String() + " (" + ca.Allowed.Name + ")",
		"filter_target":       "the client pod's egress, through the cluster's policy layer",
		"filter_load_method":  describe,
		"filter_chunk":        strconv.Itoa(o.Chunk),
	}}
	var returned time.Duration
	var objects, bytes int
	var usage map[string]float64
	var why string
	var createErr error
	w, err := ca.Watch(ctx, watchOptions(ca, agent.WantRefused, o.Wait), func(ctx context.Context) error {
		var err error
		usage, why, err = ca.CNIUsage(ctx, func(ctx context.Context) error {
			t0 := time.Now()
			objects, bytes, createErr = create(ctx)
			returned = time.Since(t0)
			return createErr
		})
		return err
	})
	lost := w.AllowedProbes - w.AllowedAnswered
	switch {
	case err == nil && lost > 0 && !w.AllowedEndAnswered:
		// Unanswered at the end of the proof: the allowed server may be
		// cut for good (misses followed by answers are a passing cut
		// while the CNI installs the policy, recorded below).
		err = fmt.Errorf("%s with %d rules also cut the allowed server %s: %d of %d probes answered, and it did not answer again within %s (the deny took effect %.3fs after the first create)",
			mech, n, w.Allowed, w.AllowedAnswered, w.AllowedProbes, o.Wait, w.AfterSeconds)
	case err != nil && createErr == nil && w.Schema == agent.SchemaWatch && w.Error == "" && w.Before && !w.Changed && w.Probes > 0 && w.Answered == w.Probes:
		// Accepted, never enforced: the CNI ignores the objects.
		ev := fmt.Sprintf("the API server accepted %d object(s) (%d bytes) in %.2fs, but %s (%s) answered %d of %d probes over the next %s",
			objects, bytes, returned.Seconds(), w.Target, ca.Other.Name, w.Answered, w.Probes, o.Wait)
		return nil, errors.Join(&NotEnforcedError{Mechanism: mech, Rules: n, Evidence: ev}, removeAll(ctx, remove))
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("load %s with %d rules: %w", mech, n, err), removeAll(ctx, remove))
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

// policyObjects builds a mechanism's objects for the deny set and returns
// how to create them (objects and bytes sent) and remove them.
func policyObjects(ctx context.Context, ca *cluster.Access, mech, name string, cidrs []netip.Prefix, chunk int) (
	create func(context.Context) (int, int, error), remove func(context.Context) error, describe string, dryRun []preflight.Object, err error) {
	switch mech {
	case MechNetworkPolicy:
		labels := maps.Clone(ca.Labels)
		pols, err := DenyEgressPolicies(name, ca.Namespace, metav1.LabelSelector{MatchLabels: ca.ClientLabels}, cidrs, chunk, labels)
		if err != nil {
			return nil, nil, "", nil, err
		}
		create = func(ctx context.Context) (int, int, error) {
			n, b := 0, 0
			for _, p := range pols {
				if err := kube.ApplyPolicy(ctx, ca.Clientset, p); err != nil {
					return n, b, err
				}
				n, b = n+1, b+kube.ObjectBytes(p)
			}
			return n, b, nil
		}
		remove = func(ctx context.Context) error {
			var errs []error
			for _, p := range pols {
				errs = append(errs, kube.DeletePolicy(ctx, ca.Clientset, ca.Namespace, p.Name))
			}
			return errors.Join(errs...)
		}
		var first []preflight.Object
		if len(pols) > 0 {
			first = []preflight.Object{{Obj: pols[0], Why: "the egress-filter scenario's " + mech + " objects"}}
		}
		return create, remove, fmt.Sprintf("%d NetworkPolicy object(s): egress allowed to 0.0.0.0/0 and ::/0 except the deny set, split into disjoint ipBlocks of at most %d excepts per object", len(pols), chunk), first, nil
	case MechCiliumPolicy, MechCalicoNetworkSet:
		if ca.Dynamic == nil {
			return nil, nil, "", nil, fmt.Errorf("%w: no dynamic client for the cluster's policy resources", scenario.ErrNeedsCluster)
		}
		var objs []*unstructured.Unstructured
		var gvrs []schema.GroupVersionResource
		labels := maps.Clone(ca.ClusterLabels)
		if mech == MechCiliumPolicy {
			gvrs = []schema.GroupVersionResource{kube.CiliumClusterwidePolicies}
		} else {
			gvrs = []schema.GroupVersionResource{kube.CalicoGlobalNetworkSets, kube.CalicoGlobalNetworkPolicies}
		}
		if err := kube.Served(ctx, ca.Discovery, gvrs...); err != nil {
			if kube.IsNotServed(err) {
				return nil, nil, "", nil, fmt.Errorf("%w: %s: %v", scenario.ErrNotServed, mech, err)
			}
			return nil, nil, "", nil, err
		}
		if mech == MechCiliumPolicy {
			objs, err = kube.CiliumDenyPolicies(name, ca.ClientLabels, cidrs, chunk, labels)
		} else {
			objs, err = kube.CalicoDenyObjects(name, ca.ClientLabels, cidrs, chunk, labels)
		}
		if err != nil {
			return nil, nil, "", nil, err
		}
		create = func(ctx context.Context) (int, int, error) { return kube.CreateClusterObjects(ctx, ca.Dynamic, objs) }
		remove = func(ctx context.Context) error {
			var errs []error
			for _, g := range gvrs {
				_, err := kube.DeleteClusterObjects(ctx, ca.Dynamic, g, kube.RunSelector(ca.RunID), 2*time.Minute)
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		}
		return create, remove, fmt.Sprintf("%d %s object(s), at most %d CIDRs each", len(objs), mech, chunk),
			kube.ClusterPreflightObjects(ca.Dynamic, objs, "the egress-filter scenario's "+mech+" objects"), nil
	}
	return nil, nil, "", nil, fmt.Errorf("%q is not a cluster policy mechanism (%s)", mech, strings.Join(PolicyMechanisms, ", "))
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
