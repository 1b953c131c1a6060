package services

// A cluster point's service proxy (issue 36): what serves the ClusterIP
// services, kube-proxy's own usage while they are programmed, and how a
// report draws cluster points (one curve per service proxy).

import (
	"context"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/pkg/result"
)

// proxyReading is what ProxyUsage measured around the point's creation.
type proxyReading struct {
	usage map[string]float64
	why   string
}

// withProxyUsage wraps create in the Access's ProxyUsage (kube-proxy's
// CPU and memory meanwhile): the wrapped function and where its reading
// lands once it has run.
func (p *clusterPoint) withProxyUsage(create func(context.Context) error) (func(context.Context) error, *proxyReading) {
	r := &proxyReading{why: "the deployment gives no kube-proxy usage"}
	if p.ca.ProxyUsage == nil {
		return create, r
	}
	return func(ctx context.Context) error {
		var err error
		r.usage, r.why, err = p.ca.ProxyUsage(ctx, create)
		return err
	}, r
}

// copyMetrics copies usage's metrics named in names to m, renamed.
func copyMetrics(m, usage map[string]float64, names map[string]string) {
	for k, v := range usage {
		if name, ok := names[k]; ok {
			m[name] = v
		}
	}
}

// proxyConfig adds the point's service proxy, kube-proxy's usage and the
// API rate to cfg.
func (p *clusterPoint) proxyConfig(cfg map[string]string, r *proxyReading) {
	sp := p.ca.ServiceProxy
	if sp == "" {
		sp = "unknown: the deployment does not say"
	}
	cfg["service_proxy"] = sp
	if len(p.ca.ServiceProxyEvidence) > 0 {
		cfg["service_proxy_evidence"] = strings.Join(p.ca.ServiceProxyEvidence, "; ")
	}
	u := "kube-proxy on the two nodes (its pods' cgroups, or its own cgroup outside pods), over the whole creation, inside the CNI's window"
	switch {
	case r.usage == nil:
		u = "not measured: " + r.why
	case r.why != "":
		u += "; " + r.why
	}
	cfg["svc_cluster_kube_proxy"] = u
	burst := "burst unknown"
	if p.ca.APIBurst > 0 {
		burst = fmt.Sprintf("burst %d", p.ca.APIBurst)
	}
	cfg["svc_cluster_api_rate"] = fmt.Sprintf("the client's limit %g requests/s, %s (--api-qps, --api-burst); %d workers; calls retried with backoff on 429, 5xx and timeouts (kube.RetryPolicy)",
		p.o.ClientQPS, burst, p.o.Workers)
	cfg["svc_cluster_samples"] = "one sample per repeat: each repeat prepares the point anew (the N−1 fillers, then the measured service, its watch, the cells, the removal), " +
		"so programming, first-connect and removal times have one sample per repeat, each from a set-up of its own"
}

// ServiceProxyLabel implements scenario.ServiceProxyLabeler: on a cluster
// the runs carry cluster.LabelServiceProxy, which names the curves.
func (s *Scenario) ServiceProxyLabel() bool { return s.backend == cluster.Name }

// ClusterPointMetrics are the per-point costs of a cluster point, drawn
// against N.
var ClusterPointMetrics = []string{MetricClusterProgrammingSeconds, MetricClusterFirstConnect, MetricClusterRemovalRefusedSeconds,
	MetricClusterRemovalSeconds, MetricClusterFillersSeconds, MetricClusterCreatePerSec, MetricClusterProxyCPU, MetricClusterCNICPU,
	MetricClusterProxyMemory, MetricClusterCNIMemory, MetricClusterSettleSeconds}

// clusterTitles title the cluster points' metrics (the lab's shape
// carries them too: documents drawn with it, and those whose own shape
// left them untitled, get them).
var clusterTitles = map[string]string{
	MetricClusterProgrammingSeconds:    "Programming the Nth service",
	MetricClusterFirstConnect:          "First connection to the Nth service",
	MetricClusterRemovalRefusedSeconds: "Removal until the VIP stopped answering",
	MetricClusterRemovalSeconds:        "Removal from the API",
	MetricClusterProxyCPU:              "kube-proxy's CPU while programming",
	MetricClusterCNICPU:                "The CNI's CPU while programming",
	MetricClusterFillersSeconds:        "Creating the N−1 fillers",
	MetricClusterCreatePerSec:          "Fillers created per second",
	MetricClusterProxyMemory:           "kube-proxy's memory after programming",
	MetricClusterCNIMemory:             "The CNI's memory after programming",
	MetricClusterSettleSeconds:         "Settling after the removal",
}

// clusterShape draws cluster points: every metric against N, one line
// (and colour) per service proxy (cluster.LabelServiceProxy: kube-proxy's
// mode, Cilium's replacement, Calico's eBPF dataplane), prefixed with the
// CNI's datapath when several CNIs are drawn. Every cluster point is
// implementation ImplCluster, so the implementation names no line.
func clusterShape() result.ScenarioShape {
	sh := shape()
	sw := *sh.Sweep
	sw.Series, sw.SeriesHeader = cluster.LabelServiceProxy, "Service proxy"
	sw.Baseline = ""
	sw.Intro = "Every metric against the number of ClusterIP services on the cluster (log scale; N−1 selectorless fillers, then the measured service), " +
		"one line per CNI and service proxy (kube-proxy and its mode, or the CNI that replaces it); median over repeats with its 95 % CI, each repeat a set-up of its own. " +
		"Each cell's client ran in the client pod against the measured service's VIP. Points that were skipped or failed are named under the chart and in the tables."
	sw.PointMetrics = ClusterPointMetrics
	sw.PointLead = "Programming the Nth service: time until its VIP answered for good, the first connection's connect time through it, its removal, " +
		"the fillers' creation, and the CPU and memory of kube-proxy and of the CNI's pods while they were programmed."
	sh.Sweep = &sw // shape()'s titles hold clusterTitles
	return sh
}
