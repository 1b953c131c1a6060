package services

// A cluster point's options, their defaults and bounds, and its metrics'
// names (cluster.go prepares the point).

import (
	"fmt"
	"math"
	"time"

	"github.com/cnibench/cnibench/internal/scenario"
)

// ClusterScaleFlag is the flag that says the cluster may take more than
// DefaultClusterMaxServices services per point.
const ClusterScaleFlag = "--cluster-scale"

// DefaultClusterMaxServices bounds a cluster point without
// ClusterScaleFlag. Each service is two API objects (the Service and its
// EndpointSlice) written to etcd and sent by watch to every node's service
// proxy, and one ClusterIP taken from the cluster's service range; in
// kube-proxy's iptables mode every node rewrites its whole ruleset on each
// sync, so its cost grows with the total (the lab's model of it loaded
// 10 000 services, ≈ 130 000 rules, in 175 s per node pair,
// docs/scenarios.md), delaying every other service change of the cluster
// meanwhile. 1 000 services are 2 000 writes, about 40 s at the client's
// 50 requests/s, and a tenth of the 10 000 services per cluster that
// Kubernetes' scalability thresholds assume: a load a shared cluster takes
// without notice. More is the user's call (ClusterScaleFlag; the local
// cluster of `make e2e` passes it).
const DefaultClusterMaxServices = 1000

// ClusterScaleMaxServices is the bound with ClusterScaleFlag: the
// scenario's own bound on --services.
const ClusterScaleMaxServices = MaxServices

// Defaults of ClusterOptions.
const (
	// DefaultClusterWorkers creating or deleting services at once: enough
	// to keep the client's rate limiter busy (each worker makes two calls
	// per service), few enough not to queue hundreds of calls behind it.
	// A higher API rate (--api-qps) gets one worker per 25 requests/s,
	// at most MaxClusterWorkers (workersFor).
	DefaultClusterWorkers = 8
	// MaxClusterWorkers bounds the workers of a high API rate.
	MaxClusterWorkers = 64
	// DefaultClusterQPS is the client's API rate (requests per second) of
	// the clientset kube.LoadConfig makes (burst 100): creating N services
	// takes 2N calls, so about N/25 seconds once the burst is spent —
	// 10 000 services ≈ 400 s — whatever the API server could take.
	DefaultClusterQPS = 50
	// DefaultWatchInterval is the time between probes of the measured
	// VIP: the resolution of the programming and removal times.
	DefaultWatchInterval = 5 * time.Millisecond
	// DefaultWatchWait bounds the wait for the measured VIP to answer
	// (or stop answering) after its change.
	DefaultWatchWait = 3 * time.Minute
	// DefaultWatchConfirm is how long the VIP must stay in the new state
	// for the change to count (kube-proxy may program a rule and rewrite
	// it on its next sync).
	DefaultWatchConfirm = time.Second
	// DefaultDeleteTimeout bounds the wait, after the delete calls, until
	// the point's objects are gone from the API.
	DefaultDeleteTimeout = 2 * time.Minute
	// DefaultSettleCPU and DefaultSettleWindow: after a point's removal
	// the CNI has settled when its pods on the two nodes use less than
	// DefaultSettleCPU millicores over DefaultSettleWindow. Idle, the
	// field's agents use 1–120 mCPU together (docs/data/field-*); removing
	// 1 000 services kept Calico's eBPF felix at 1 458 mCPU for seconds
	// after the API had none left. DefaultSettleTimeout bounds the wait.
	DefaultSettleCPU     = 250.0
	DefaultSettleWindow  = 2 * time.Second
	DefaultSettleTimeout = 90 * time.Second
)

// watchProbeTimeout is each probe's bound: a VIP whose proxy drops
// instead of rejecting counts as not answering after it.
const watchProbeTimeout = 300 * time.Millisecond

// Label keys on a cluster point's objects, besides the run's labels
// (cluster.Access.Labels: the run's clean-up and `cnibench k8s clean`
// find them by those).
const (
	// LabelKeyScenario's value is ScenarioName.
	LabelKeyScenario = "cnibench.io/scenario"
	// LabelKeyPoint's value is the point's random ID: Close deletes this
	// point's objects only.
	LabelKeyPoint = "cnibench.io/services-point"
)

// ClusterOptions configure a cluster point. Zero values take the
// defaults.
type ClusterOptions struct {
	// MaxServices bounds the point's N: DefaultClusterMaxServices unless
	// the user passed ClusterScaleFlag (then ClusterScaleMaxServices). A
	// point above it fails Prepare with an error wrapping
	// scenario.ErrTooLarge.
	MaxServices int
	// Workers create (and delete) services at once: DefaultClusterWorkers.
	Workers int
	// ClientQPS is the API rate the clientset was made with
	// (DefaultClusterQPS: kube.LoadConfig's). The clientset's limiter is
	// the pace, not this: it sizes the clean-up's time budget and the
	// config says what creation rate it allows next to the one measured.
	ClientQPS float64
	// WatchInterval, WatchWait and WatchConfirm are the watch's --interval,
	// --wait and --confirm (DefaultWatchInterval, DefaultWatchWait,
	// DefaultWatchConfirm).
	WatchInterval, WatchWait, WatchConfirm time.Duration
	// DeleteTimeout bounds the wait until the deleted objects are gone
	// (DefaultDeleteTimeout).
	DeleteTimeout time.Duration
	// SettleCPU, SettleWindow and SettleTimeout: after the removal, Close
	// waits until the CNI's pods use less than SettleCPU millicores over
	// a SettleWindow, at most SettleTimeout (DefaultSettleCPU,
	// DefaultSettleWindow, DefaultSettleTimeout), so that the next point
	// measures its own N and not this one's tear-down.
	SettleCPU                   float64
	SettleWindow, SettleTimeout time.Duration
}

// withDefaults fills o's zero values; a negative value is an error.
func (o ClusterOptions) withDefaults() (ClusterOptions, error) {
	switch {
	case o.MaxServices < 0, o.Workers < 0, o.ClientQPS < 0, o.WatchInterval < 0, o.WatchWait < 0, o.WatchConfirm < 0, o.DeleteTimeout < 0,
		o.SettleCPU < 0, o.SettleWindow < 0, o.SettleTimeout < 0:
		return o, fmt.Errorf("negative cluster option in %+v", o)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if o.MaxServices == 0 {
		o.MaxServices = DefaultClusterMaxServices
	}
	if o.ClientQPS == 0 {
		o.ClientQPS = DefaultClusterQPS
	}
	if o.Workers == 0 {
		o.Workers = workersFor(o.ClientQPS)
	}
	def(&o.WatchInterval, DefaultWatchInterval)
	def(&o.WatchWait, DefaultWatchWait)
	def(&o.WatchConfirm, DefaultWatchConfirm)
	def(&o.DeleteTimeout, DefaultDeleteTimeout)
	def(&o.SettleWindow, DefaultSettleWindow)
	def(&o.SettleTimeout, DefaultSettleTimeout)
	if o.SettleCPU == 0 {
		o.SettleCPU = DefaultSettleCPU
	}
	switch {
	case o.WatchInterval < 100*time.Microsecond || o.WatchInterval > time.Second:
		return o, fmt.Errorf("watch interval %s: must be between 100µs and 1s (the agent's bounds)", o.WatchInterval)
	case o.WatchWait > 30*time.Minute:
		return o, fmt.Errorf("watch wait %s: at most 30m (the agent's bound)", o.WatchWait)
	case o.WatchConfirm > o.WatchWait:
		return o, fmt.Errorf("watch confirm %s: at most the wait %s", o.WatchConfirm, o.WatchWait)
	}
	return o, nil
}

// ClusterTooLarge returns the error of a cluster point of n services
// above o's bound (wrapping scenario.ErrTooLarge: a Point's Skip or
// PrepareCluster's error, recorded "too large: …"), nil if it is within
// it. It makes no API call: Points can mark such points in advance.
func ClusterTooLarge(n int, o ClusterOptions) error {
	bound := o.MaxServices
	if bound <= 0 {
		bound = DefaultClusterMaxServices
	}
	switch {
	case n <= bound:
		return nil
	case bound <= DefaultClusterMaxServices:
		return fmt.Errorf("%w: %d services: more than %d per point on a cluster, refused without %s (each is a Service and an EndpointSlice written to etcd and watched by every node's service proxy; pass %s if the cluster may take it)",
			scenario.ErrTooLarge, n, bound, ClusterScaleFlag, ClusterScaleFlag)
	}
	return fmt.Errorf("%w: %d services: more than %d per point on a cluster, even with %s", scenario.ErrTooLarge, n, bound, ClusterScaleFlag)
}

// workersFor is the workers that keep an API rate of qps requests/s busy:
// DefaultClusterWorkers up to 200 requests/s, then one per 25 requests/s
// (a call takes tens of milliseconds on a loaded API server), at most
// MaxClusterWorkers.
func workersFor(qps float64) int {
	return min(max(DefaultClusterWorkers, int(math.Ceil(qps/25))), MaxClusterWorkers)
}
