package services

// Services at scale on a Kubernetes cluster (issue 21, item 4): one point
// of implementation "cluster" — the cluster's own service implementation,
// kube-proxy or the CNI's replacement for it — with N selectorless
// ClusterIP services, measured from the run's client pod.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/preflight"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/services/svctable"
)

// ImplCluster is the implementation label of a point on a Kubernetes
// cluster: whatever serves ClusterIP services there (kube-proxy in its
// configured mode, or the CNI's replacement, e.g. Cilium's socket LB).
// cnibench does not choose it; the cni and config records say which.
const ImplCluster = "cluster"

// ClusterCells are a cluster point's cells: pod-to-service tcp_crr and
// tcp_rr at the scenario's flows, from the run's client pod to the
// measured service (service mode, `--service VIP:PORT`). The lab's http
// cells and hairpin path are not run on a cluster: the run's server pod
// is the service's only endpoint and the point proves its path through
// that port alone.
func ClusterCells() []scenario.Cell {
	return []scenario.Cell{
		{Test: engine.TCPCRR, Flows: 1, Path: PathPodToService},
		{Test: engine.TCPRR, Flows: RRFlows, Path: PathPodToService},
	}
}

// PrepareCluster sets up one point of implementation ImplCluster with n
// services on the cluster ca gives (the deployment's ClusterAccess), and
// returns it ready for its cells (the Prepared implements scenario.Targeter; use
// ClusterCells for the point's cells).
//
// It is meant to be called from the scenario's Prepare when the
// deployment is a cluster's (ClusterAccess succeeds), with the point's n and the options the run's flags give
// (MaxServices: ClusterScaleMaxServices when the user passed
// ClusterScaleFlag, DefaultClusterMaxServices otherwise); the lab's
// implementations are the lab's. The point's labels are the scenario's:
// LabelImplementation=ImplCluster, LabelServices=n. An n above
// o.MaxServices returns an error wrapping scenario.ErrTooLarge at once,
// before any API call: the caller records the point "too large"
// (scenario.Point{Skip: err}.SkipReason()), or marks it so in Points with
// ClusterTooLarge.
//
// The point:
//
//  1. creates n−1 filler services (svctable.CreateServices, o.Workers at a
//     time): selectorless ClusterIP services on the server pod's service
//     port, each with one EndpointSlice onto the run's cross-node server
//     pod (ca.Allowed), so that each costs the service proxy what the
//     measured one does;
//  2. creates the measured service's Service object alone: without an
//     EndpointSlice its VIP does not answer (kube-proxy rejects it,
//     others drop it), and the API server has given it its VIP;
//  3. runs `cnibench k8s agent watch --target VIP:PORT --want answers` in
//     the client pod (ca.Client), which probes until the VIP does not
//     answer and says "ready";
//  4. sends the watch its go line, then creates the EndpointSlice;
//  5. reads the watch's answer: the time from the go line until the
//     first probe of the lasting answer (MetricClusterProgrammingSeconds,
//     at MetricClusterWatchResolution), and that probe's connect time,
//     the first connection through the newly programmed service
//     (MetricClusterFirstConnect).
//
// The programming time is therefore measured from the EndpointSlice's
// create call (the go line travels the exec stream to the pod while the
// create travels to the API server; both take milliseconds) to the first
// connection through the VIP that answered and was followed by answers
// only for o.WatchConfirm: it covers the create call, the control plane's
// propagation (the API server's watch to kube-proxy or the CNI's agent on
// the client's node) and the datapath's programming (kube-proxy's sync,
// rate-limited by its --iptables-min-sync-period, 1 s by default; the
// CNI's BPF maps), and any backlog of the fillers' programming still
// under way: it is the time until the Nth service answers. CNI CPU and
// memory (cluster.Access.CNIUsage: the CNI's pods on the two nodes) are
// measured around steps 1–5, kube-proxy's (cluster.Access.ProxyUsage,
// where it runs) inside that window. The client's API rate is the
// clientset's (ca.APIQPS, --api-qps) unless o.ClientQPS says otherwise.
//
// Everything the point creates carries ca.Labels plus LabelKeyScenario
// and LabelKeyPoint; on any error of Prepare, and on Close, it is deleted
// by those (svctable.DeleteServices), nothing left behind (a clean-up cut
// short leaves objects with the run's labels, which the run's own
// clean-up removes). Close times the removal: until the measured VIP
// stops answering (a second watch, --want refused) and until the API
// objects are gone.
func PrepareCluster(ctx context.Context, env scenario.Env, ca *cluster.Access, n int, o ClusterOptions) (_ scenario.Prepared, err error) {
	if ca != nil && o.ClientQPS == 0 {
		o.ClientQPS = ca.APIQPS // the clientset's own limit (0: unknown, the default)
	}
	o, err = o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("services on a cluster: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("services on a cluster: %d services: want at least 1", n)
	}
	if err := ClusterTooLarge(n, o); err != nil {
		return nil, err
	}
	if err := checkAccess(ca); err != nil {
		return nil, fmt.Errorf("services on a cluster: %w", err)
	}
	id, err := pointID()
	if err != nil {
		return nil, fmt.Errorf("services on a cluster: %w", err)
	}
	log := env.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := maps.Clone(ca.Labels)
	l[LabelKeyScenario] = ScenarioName
	l[LabelKeyPoint] = id
	p := &clusterPoint{
		ca: ca, o: o, n: n, log: log, labels: l,
		selector: labels.SelectorFromSet(l).String(),
		prefix:   "svcs-" + id,
		endpoint: netip.AddrPortFrom(netip.MustParseAddr(ca.Allowed.IP), uint16(ca.Allowed.ServicePort)).String(),
		metrics:  map[string]float64{},
	}
	defer func() {
		if err == nil {
			return
		}
		if cerr := p.cleanUp(ctx); cerr != nil {
			err = fmt.Errorf("%w (clean-up: %v)", err, cerr)
		}
		err = fmt.Errorf("services on a cluster, %d services: %w", n, err)
	}()

	// A cluster whose admission refuses the point's objects skips the
	// point before the first filler is created.
	if err = p.admit(ctx); err != nil {
		return nil, err
	}
	var prog agent.Watch
	create := func(ctx context.Context) error {
		var err error
		prog, err = p.create(ctx)
		return err
	}
	// kube-proxy's usage inside the CNI's window (its two readings are the
	// CNI window's only extra time).
	measured, proxy := p.withProxyUsage(create)
	var usage map[string]float64
	var why string
	if ca.CNIUsage != nil {
		usage, why, err = ca.CNIUsage(ctx, measured)
	} else {
		why = "not measured: the deployment gives no CNI usage"
		err = measured(ctx)
	}
	if err != nil {
		return nil, err
	}
	copyMetrics(p.metrics, usage, cniUsageMetrics)
	copyMetrics(p.metrics, proxy.usage, proxyUsageMetrics)
	p.metrics[MetricClusterProgrammingSeconds] = prog.AfterSeconds
	p.metrics[MetricClusterWatchResolution] = prog.ResolutionSeconds
	if prog.FirstConnectSeconds > 0 {
		p.metrics[MetricClusterFirstConnect] = prog.FirstConnectSeconds
	}
	p.config = p.makeConfig(env, usage, why)
	p.proxyConfig(p.config, proxy)
	log.Debug("services on a cluster prepared", "services", n, "vip", p.vip, "programming_s", prog.AfterSeconds)
	return p, nil
}

// checkAccess says what ca lacks for a point.
func checkAccess(ca *cluster.Access) error {
	switch {
	case ca == nil || ca.Clientset == nil:
		return errors.New("no cluster access")
	case ca.Agent == nil || ca.Client == nil:
		return errors.New("no client pod to run the agent in")
	case len(ca.Labels) == 0:
		return errors.New("no run labels: the services could not be found to delete them")
	case ca.Allowed.ServicePort < 1 || ca.Allowed.ServicePort > 65535:
		return fmt.Errorf("server pod %s has no service-mode port", ca.Allowed.Name)
	}
	if a, err := netip.ParseAddr(ca.Allowed.IP); err != nil || !a.Is4() {
		return fmt.Errorf("server pod %s: address %q is not IPv4 (the services are IPv4)", ca.Allowed.Name, ca.Allowed.IP)
	}
	return nil
}

// pointID is a random ID of 6 hex digits (object names and LabelKeyPoint).
func pointID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("point id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// clusterPoint is a prepared cluster point.
type clusterPoint struct {
	ca  *cluster.Access
	o   ClusterOptions
	n   int
	log *slog.Logger
	// labels on every object, selector selecting them; prefix of the
	// objects' names.
	labels           map[string]string
	selector, prefix string
	// vip is the measured service's VIP:PORT, endpoint its only endpoint.
	vip, endpoint string
	// answered: the measured VIP was seen answering (Close watches it stop).
	answered bool
	metrics  map[string]float64
	config   map[string]string

	mu     sync.Mutex
	closed bool
}

// measuredName is the measured service's name; fillers are
// prefix-f-0 … prefix-f-(n-2).
func (p *clusterPoint) measuredName() string { return p.prefix + "-m" }
func (p *clusterPoint) fillerPrefix() string { return p.prefix + "-f" }

// admit dry-runs the measured service and its EndpointSlice (the
// fillers are the same shape): an error wrapping cluster.ErrRefused if
// the cluster refuses them.
func (p *clusterPoint) admit(ctx context.Context) error {
	svc, slice := svctable.ServiceObjects(p.ca.Namespace, p.measuredName(), int32(p.ca.Allowed.ServicePort),
		svctable.ReadyEndpoints([]string{p.ca.Allowed.IP}), p.labels, "")
	why := "the services scenario's services"
	return cluster.Admit(ctx, p.ca.Clientset, []preflight.Object{{Obj: svc, Why: why}, {Obj: slice, Why: why}})
}

// create runs steps 1–5 of PrepareCluster and records their metrics.
func (p *clusterPoint) create(ctx context.Context) (agent.Watch, error) {
	cs, ns := p.ca.Clientset, p.ca.Namespace
	port := int32(p.ca.Allowed.ServicePort)
	eps := []string{p.ca.Allowed.IP}
	if fillers := p.n - 1; fillers > 0 {
		t0 := time.Now()
		refs, err := svctable.CreateServices(ctx, cs, ns, fillers, p.fillerPrefix(), port, eps, p.labels, p.o.Workers)
		took := time.Since(t0)
		if err != nil {
			return agent.Watch{}, fmt.Errorf("filler services: %w", err)
		}
		if len(refs) != fillers {
			return agent.Watch{}, fmt.Errorf("filler services: %d created, want %d", len(refs), fillers)
		}
		p.metrics[MetricClusterFillersSeconds] = took.Seconds()
		if took > 0 {
			p.metrics[MetricClusterCreatePerSec] = float64(fillers) / took.Seconds()
		}
		var size int
		for _, r := range refs {
			// The request bodies as svctable.CreateServices sends them; the
			// slices' owner reference carries the service's UID, 36
			// characters as the API server makes them.
			svc, slice := svctable.ServiceObjects(ns, r.Name, port, svctable.ReadyEndpoints(eps), p.labels, placeholderUID)
			size += encodedSize(svc) + encodedSize(slice)
		}
		p.metrics[MetricClusterAPIObjects] += float64(2 * fillers)
		p.metrics[MetricClusterAPIBytes] += float64(size)
	}

	svc, slice := svctable.ServiceObjects(ns, p.measuredName(), port, svctable.ReadyEndpoints(eps), p.labels, "")
	size := encodedSize(svc) // as sent, before the call
	cctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	got, err := cs.CoreV1().Services(ns).Create(cctx, svc, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return agent.Watch{}, fmt.Errorf("create the measured service %s/%s: %w", ns, svc.Name, err)
	}
	p.metrics[MetricClusterAPIObjects]++
	p.metrics[MetricClusterAPIBytes] += float64(size)
	vip, err := netip.ParseAddr(got.Spec.ClusterIP)
	if err != nil || !vip.Is4() {
		return agent.Watch{}, fmt.Errorf("the measured service %s/%s got no IPv4 cluster IP (%q): the services are IPv4", ns, svc.Name, got.Spec.ClusterIP)
	}
	p.vip = netip.AddrPortFrom(vip, uint16(port)).String()
	if got.UID != "" {
		slice.OwnerReferences = svctable.OwnedBy(got.Name, got.UID)
	}
	w, err := p.watch(ctx, agent.WantAnswers, func(ctx context.Context) error {
		size := encodedSize(slice)
		cctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
		defer cancel()
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(cctx, slice, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the measured service's endpointslice %s/%s: %w", ns, slice.Name, err)
		}
		p.metrics[MetricClusterAPIObjects]++
		p.metrics[MetricClusterAPIBytes] += float64(size)
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("the measured service %s (%s → %s): %w", svc.Name, p.vip, p.endpoint, err)
	}
	p.answered = true
	p.metrics[MetricClusterServices] = float64(p.n)
	return w, nil
}
