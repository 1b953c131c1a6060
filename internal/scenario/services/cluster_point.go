package services

// The cluster point once created: its API encoders, watch, targets,
// removal (Close) and config.

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/services/svctable"
)

// apiCallTimeout bounds each API call of the point (kube's own bound).
const apiCallTimeout = 30 * time.Second

// placeholderUID stands for a service's UID where it is not known (a
// filler's), with the length of the API server's.
const placeholderUID = "00000000-0000-0000-0000-000000000000"

// jsonEncoder encodes objects as client-go's typed clients send them by
// default (JSON with apiVersion and kind).
func jsonEncoder(gv schema.GroupVersion) runtime.Encoder {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return scheme.Codecs.WithoutConversion().EncoderForVersion(info.Serializer, gv)
}

var (
	coreEncoder      = jsonEncoder(corev1.SchemeGroupVersion)
	discoveryEncoder = jsonEncoder(discoveryv1.SchemeGroupVersion)
)

// encodedSize is the size of obj's request body (0 if it cannot be
// encoded, which the types here always can).
func encodedSize(obj runtime.Object) int {
	enc := coreEncoder
	if _, ok := obj.(*discoveryv1.EndpointSlice); ok {
		enc = discoveryEncoder
	}
	b, err := runtime.Encode(enc, obj)
	if err != nil {
		return 0
	}
	return len(b)
}

// watch runs the agent's watch of the VIP (cluster.Access.Watch).
func (p *clusterPoint) watch(ctx context.Context, want string, change func(context.Context) error) (agent.Watch, error) {
	return p.ca.Watch(ctx, agent.WatchOptions{Target: p.vip, Want: want, Interval: p.o.WatchInterval,
		ProbeTimeout: watchProbeTimeout, Wait: p.o.WatchWait, Confirm: p.o.WatchConfirm}, change)
}

// cleanUp deletes the point's objects after a failed Prepare, with a
// budget of its own (also when ctx was cancelled).
func (p *clusterPoint) cleanUp(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.deleteBudget())
	defer cancel()
	_, err := svctable.DeleteServices(cctx, p.ca.Clientset, p.ca.Namespace, p.selector, p.o.Workers, p.o.DeleteTimeout)
	return err
}

// deleteBudget bounds a whole deletion: n deletes at the pace the API
// server was seen to keep — the client's rate, or the point's measured
// creation pace (two calls a filler) where that was slower: an API server
// sharing its cores with an agent busy with thousands of services (Calico
// at 10 000, docs/findings.md §16f) deletes no faster than it created —
// doubled, plus the wait until they are gone.
func (p *clusterPoint) deleteBudget() time.Duration {
	rate := p.o.ClientQPS
	if r := p.metrics[MetricClusterCreatePerSec]; r > 0 && 2*r < rate {
		rate = 2 * r
	}
	calls := time.Duration(float64(2*p.n+10) / rate * float64(time.Second))
	return 2*calls + p.o.DeleteTimeout + apiCallTimeout
}

// Metrics implements scenario.Prepared.
func (p *clusterPoint) Metrics() map[string]float64 { return maps.Clone(p.metrics) }

// Config implements scenario.Prepared.
func (p *clusterPoint) Config() map[string]string { return maps.Clone(p.config) }

// Target implements scenario.Targeter: every cell's client runs in the
// client pod against the measured service in service mode.
func (p *clusterPoint) Target(c scenario.Cell) (scenario.Target, error) {
	if c.Path != "" && c.Path != PathPodToService {
		return scenario.Target{}, fmt.Errorf("services on a cluster: no %s path (a cluster point runs %s only)", c.Path, PathPodToService)
	}
	switch c.Test {
	case engine.TCPRR, engine.TCPCRR:
		return scenario.Target{Client: p.ca.Client, Args: []string{"--service", p.vip}}, nil
	}
	return scenario.Target{}, fmt.Errorf("services on a cluster: no target for %s (a cluster point runs %s and %s in service mode)", c.Test, engine.TCPCRR, engine.TCPRR)
}

// Close implements scenario.Prepared: it deletes the point's objects and
// times it — MetricClusterRemovalSeconds from the first delete call until
// the API has none of them left, MetricClusterRemovalRefusedSeconds from
// the same start until the measured VIP stopped answering for good (the
// EndpointSlices go first, in one deletecollection call, then the
// Services), then waits until the CNI has settled (settle). A second
// call does nothing.
func (p *clusterPoint) Close(ctx context.Context) (map[string]float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil
	}
	p.closed = true
	watchable := p.answered && ctx.Err() == nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.deleteBudget()+2*p.o.WatchWait)
	defer cancel()
	m := map[string]float64{}
	removed := false
	var rmErr error
	remove := func(ctx context.Context) error {
		removed = true
		t0 := time.Now()
		_, rmErr = svctable.DeleteServices(ctx, p.ca.Clientset, p.ca.Namespace, p.selector, p.o.Workers, p.o.DeleteTimeout)
		if rmErr != nil {
			return rmErr // the watch is interrupted: the VIP may never stop answering
		}
		m[MetricClusterRemovalSeconds] = time.Since(t0).Seconds()
		return nil
	}
	var werr error
	if watchable {
		var w agent.Watch
		w, werr = p.watch(ctx, agent.WantRefused, remove)
		if werr == nil {
			m[MetricClusterRemovalRefusedSeconds] = w.AfterSeconds
		}
	}
	if !removed {
		_ = remove(ctx)
	}
	switch {
	case rmErr != nil:
		return nil, fmt.Errorf("services on a cluster: remove %d services: %w", p.n, rmErr)
	case werr != nil:
		return nil, fmt.Errorf("services on a cluster: %d services removed in %.2f s, but the removal of the measured VIP was not seen: %w",
			p.n, m[MetricClusterRemovalSeconds], werr)
	}
	p.settle(ctx, m)
	return m, nil
}

// settle waits after the removal until the CNI's pods and kube-proxy
// (where it runs) on the two nodes use less than o.SettleCPU together over
// an o.SettleWindow, at most o.SettleTimeout: an agent or a kube-proxy
// still busy with this point's tear-down (a datapath reprogrammed for N−1
// deleted services) would otherwise be measured by the next point. It
// records the wait (MetricClusterSettleSeconds) and the last window's CPU
// (MetricClusterSettleCPU, MetricClusterSettleProxyCPU); one that did not
// settle in time is logged, not an error (the next point's config and CPU
// show it). With neither usage readable (no pods of the CNI's own, no
// kube-proxy, cgroups unreadable) it does nothing.
func (p *clusterPoint) settle(ctx context.Context, m map[string]float64) {
	if (p.ca.CNIUsage == nil && p.ca.ProxyUsage == nil) || ctx.Err() != nil {
		return
	}
	t0 := time.Now()
	var last settleWindow
	windows := 0
	err := wait.PollUntilContextTimeout(ctx, 0, p.o.SettleTimeout, true, func(ctx context.Context) (bool, error) {
		w, err := p.settleWindow(ctx)
		if err != nil {
			return false, err
		}
		if !w.cniRead && !w.proxyRead {
			return true, nil // nothing to wait for (no CNI pods, no kube-proxy, or their usage unreadable)
		}
		last = w
		windows++
		return w.cni+w.proxy < p.o.SettleCPU, nil
	})
	if windows > 0 {
		m[MetricClusterSettleSeconds] = time.Since(t0).Seconds()
		if last.cniRead {
			m[MetricClusterSettleCPU] = last.cni
		}
		if last.proxyRead {
			m[MetricClusterSettleProxyCPU] = last.proxy
		}
	}
	if err != nil {
		p.log.Warn("services on a cluster: the CNI or kube-proxy did not settle after the removal", "services", p.n,
			"cni_cpu_millicores", last.cni, "kube_proxy_cpu_millicores", last.proxy, "bound_millicores", p.o.SettleCPU,
			"waited", time.Since(t0).Round(time.Second), "err", err)
	}
}

// settleWindow is one window of settle: the CNI's and kube-proxy's CPU
// over o.SettleWindow, each where it was read.
type settleWindow struct {
	cni, proxy         float64
	cniRead, proxyRead bool
}

func (p *clusterPoint) settleWindow(ctx context.Context) (settleWindow, error) {
	var w settleWindow
	fn := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.o.SettleWindow):
			return nil
		}
	}
	if p.ca.ProxyUsage != nil {
		sleep := fn
		fn = func(ctx context.Context) error {
			u, _, err := p.ca.ProxyUsage(ctx, sleep)
			if v, ok := u[cluster.ProxyCPU]; ok {
				w.proxy, w.proxyRead = v, true
			}
			return err
		}
	}
	if p.ca.CNIUsage == nil {
		return w, fn(ctx)
	}
	u, _, err := p.ca.CNIUsage(ctx, fn)
	if v, ok := u["cni_cpu_millicores"]; ok {
		w.cni, w.cniRead = v, true
	}
	return w, err
}

// makeConfig describes the point for the runs' config.
func (p *clusterPoint) makeConfig(env scenario.Env, usage map[string]float64, why string) map[string]string {
	cfg := map[string]string{
		"service_implementation": ImplCluster + ": the cluster's own service implementation (kube-proxy in its configured mode, or the CNI's replacement)",
		"service_vip":            p.vip,
		"service_backends":       p.endpoint + " (pod " + p.ca.Allowed.Name + ", service-mode listener)",
		"service_layout": fmt.Sprintf("services=%d: %d selectorless ClusterIP fillers (%s-*, one EndpointSlice each onto %s), created %d at a time, then the measured service %s last (its Service, then the watch, then its EndpointSlice); labels %s",
			p.n, p.n-1, p.fillerPrefix(), p.endpoint, p.o.Workers, p.measuredName(), p.selector),
		"scenario_cells": fmt.Sprintf("%s from the client pod %s: tcp_crr ×1, tcp_rr ×%d, --service %s; the watch's answers prove the path",
			PathPodToService, p.ca.Client, RRFlows, p.vip),
		"svc_cluster_programming": fmt.Sprintf("from the measured EndpointSlice's create call (the watch's go line sent just before it) to the first probe of the lasting answer (every probe answered for %s), probes every %s from the client pod: the create call, the control plane's propagation and the datapath's programming, with any backlog of the fillers'",
			p.o.WatchConfirm, p.o.WatchInterval),
		"svc_cluster_bound": fmt.Sprintf("at most %d services per point (%d without %s)", p.o.MaxServices, DefaultClusterMaxServices, ClusterScaleFlag),
	}
	if env.Datapath != "" {
		cfg["service_datapath"] = env.Datapath
	}
	if r, ok := p.metrics[MetricClusterCreatePerSec]; ok {
		cfg["svc_cluster_create_pace"] = fmt.Sprintf("%.1f services/s measured (%d workers); the client's limit of %g requests/s allows %.1f services/s (2 calls each) once its burst is spent",
			r, p.o.Workers, p.o.ClientQPS, p.o.ClientQPS/2)
	}
	u := "the CNI's pods on the two nodes (cgroups), over the whole creation"
	switch {
	case usage == nil:
		u = "not measured: " + why
	case why != "":
		u += "; " + why
	}
	cfg["svc_cluster_cni_usage"] = u
	return cfg
}

var (
	_ scenario.Prepared = (*clusterPoint)(nil)
	_ scenario.Targeter = (*clusterPoint)(nil)
)
