package services

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// proxyFake is a kube-proxy usage for the fake cluster: its CPU over the
// w-th window (negative: none runs), and the order of the usage windows'
// starts and ends.
type proxyFake struct {
	cpu func(w int) float64

	mu     sync.Mutex
	calls  int
	events []string
}

func (p *proxyFake) usage(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
	p.mu.Lock()
	p.calls++
	w := p.calls
	p.events = append(p.events, "proxy start")
	p.mu.Unlock()
	t0 := time.Now()
	err := fn(ctx)
	p.mu.Lock()
	p.events = append(p.events, "proxy end")
	p.mu.Unlock()
	cpu := 7.0
	if p.cpu != nil {
		cpu = p.cpu(w)
	}
	if cpu < 0 {
		return nil, "no kube-proxy runs on the run's nodes", err
	}
	return map[string]float64{cluster.ProxyCPU: cpu, cluster.ProxyMemory: 5 << 20, cluster.ProxyWindow: time.Since(t0).Seconds()}, "", err
}

// withProxy is f's access with kube-proxy's usage and the cluster's
// service proxy.
func withProxy(f *fakeCluster, p *proxyFake) *cluster.Access {
	ca := f.access()
	ca.ProxyUsage = p.usage
	ca.ServiceProxy, ca.ServiceProxyEvidence = cni.ServiceProxyKubeProxy+"nftables", []string{"kube-proxy serves the services in its nftables mode"}
	ca.APIQPS, ca.APIBurst = 400, 800
	inner := ca.CNIUsage
	ca.CNIUsage = func(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
		p.mu.Lock()
		p.events = append(p.events, "cni start")
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.events = append(p.events, "cni end")
			p.mu.Unlock()
		}()
		return inner(ctx, fn)
	}
	return ca
}

// A point measures kube-proxy's usage inside the CNI's window over its
// creation, records the service proxy and the API rate it was created at,
// and waits after its removal until kube-proxy too has settled.
func TestPrepareClusterProxyUsage(t *testing.T) {
	f := newFakeCluster(runService())
	p := &proxyFake{}
	o := testOptions()
	o.ClientQPS = 0 // the Access's
	prep, err := PrepareCluster(context.Background(), scenario.Env{}, withProxy(f, p), 5, o)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	events := slices.Clone(p.events)
	p.mu.Unlock()
	if want := []string{"cni start", "proxy start", "proxy end", "cni end"}; !slices.Equal(events, want) {
		t.Errorf("usage windows %v, want kube-proxy's inside the CNI's %v", events, want)
	}
	m := prep.Metrics()
	for k, v := range map[string]float64{MetricClusterProxyCPU: 7, MetricClusterProxyMemory: 5 << 20, MetricClusterCNICPU: 42} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if m[MetricClusterProxyWindow] <= 0 || m[MetricClusterProxyWindow] > m[MetricClusterCNIWindow] {
		t.Errorf("kube-proxy's window %v s, the CNI's %v s: want within it", m[MetricClusterProxyWindow], m[MetricClusterCNIWindow])
	}
	cfg := prep.Config()
	for k, want := range map[string]string{
		"service_proxy":          "kube-proxy-nftables",
		"service_proxy_evidence": "its nftables mode",
		"svc_cluster_kube_proxy": "kube-proxy on the two nodes",
		"svc_cluster_api_rate":   "400 requests/s, burst 800 (--api-qps, --api-burst); 16 workers",
		"svc_cluster_samples":    "one sample per repeat",
	} {
		if !strings.Contains(cfg[k], want) {
			t.Errorf("config %s = %q, want it to contain %q", k, cfg[k], want)
		}
	}
	cm, err := prep.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cm[MetricClusterSettleProxyCPU] != 7 || cm[MetricClusterSettleCPU] != 42 {
		t.Errorf("settle metrics %v", cm)
	}
	if svcs, sls := f.left(t); len(svcs) != 1 || len(sls) != 0 {
		t.Fatalf("after Close: %v %v", svcs, sls)
	}
}

// Settling waits for kube-proxy as for the CNI: the sum of both under the
// bound; without kube-proxy (nil usage) the CNI alone.
func TestCloseSettlesKubeProxy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxy   func(w int) float64 // w = 1 is the creation's window
		cni     func(w int32) float64
		windows int // settle windows (kube-proxy's usage calls after the creation's)
		proxyOK bool
	}{
		{name: "kube-proxy busy, then idle", proxy: func(w int) float64 { return map[bool]float64{true: 900, false: 20}[w <= 3] }, windows: 3, proxyOK: true},
		{name: "together over the bound", proxy: func(w int) float64 { return map[bool]float64{true: 200, false: 20}[w <= 2] },
			cni: func(int32) float64 { return 100 }, windows: 2, proxyOK: true},
		{name: "no kube-proxy", proxy: func(int) float64 { return -1 }, windows: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(runService())
			f.cniCPU = tc.cni
			p := &proxyFake{cpu: tc.proxy}
			prep, err := PrepareCluster(context.Background(), scenario.Env{}, withProxy(f, p), 2, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			cm, err := prep.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			got := p.calls - 1
			p.mu.Unlock()
			if got != tc.windows {
				t.Errorf("%d settle windows, want %d (metrics %v)", got, tc.windows, cm)
			}
			if _, ok := cm[MetricClusterSettleProxyCPU]; ok != tc.proxyOK {
				t.Errorf("kube-proxy's settle CPU recorded %v, want %v: %v", ok, tc.proxyOK, cm)
			}
			if cm[MetricClusterSettleCPU]+cm[MetricClusterSettleProxyCPU] >= DefaultSettleCPU {
				t.Errorf("settled above the bound: %v", cm)
			}
		})
	}
}

// A point interrupted while kube-proxy's usage is measured (the run's
// Ctrl-C during the fillers) leaves nothing behind and keeps no metric.
func TestPrepareClusterInterruptedInProxyUsage(t *testing.T) {
	f := newFakeCluster(runService())
	ctx, cancel := context.WithCancel(context.Background())
	ca := withProxy(f, &proxyFake{})
	inner := ca.ProxyUsage
	ca.ProxyUsage = func(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
		return inner(ctx, func(ctx context.Context) error {
			err := fn(ctx) // the fillers and the measured service, then the interruption
			cancel()
			if err == nil {
				err = ctx.Err()
			}
			return err
		})
	}
	prep, err := PrepareCluster(ctx, scenario.Env{}, ca, 30, testOptions())
	if err == nil || !errors.Is(err, context.Canceled) || prep != nil {
		t.Fatalf("Prepare: %v, %v; want the interruption", prep, err)
	}
	if svcs, sls := f.left(t); len(svcs) != 1 || len(sls) != 0 {
		t.Fatalf("after an interrupted Prepare: services %v, slices %v; want the run's service only", svcs, sls)
	}
}

// On a cluster the runs are labelled with the service proxy and the
// report draws one line per service proxy with the cluster's point
// metrics; on the lab the shape is the lab's, unchanged.
func TestClusterShape(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ServiceProxyLabel() || s.Shape().Sweep.Variant != "" || !slices.Equal(s.Shape().Sweep.PointMetrics, ServiceMetrics) {
		t.Errorf("lab: label %v, shape %+v", s.ServiceProxyLabel(), s.Shape().Sweep)
	}
	s.SetBackend(cluster.Name, ClusterOptions{})
	sh := s.Shape()
	if !s.ServiceProxyLabel() || sh.Sweep.Series != cluster.LabelServiceProxy || sh.Sweep.Variant != "" || sh.Sweep.Baseline != "" {
		t.Errorf("cluster: label %v, shape %+v", s.ServiceProxyLabel(), sh.Sweep)
	}
	if why := sh.Valid(); why != "" {
		t.Errorf("cluster shape: %s", why)
	}
	for _, m := range sh.Sweep.PointMetrics {
		if _, ok := result.Known(m); !ok {
			t.Errorf("point metric %s is not documented", m)
		}
	}
	if lab := shape(); lab.Sweep.Variant != "" || lab.Sweep.Baseline != ImplNone {
		t.Errorf("the lab's shape changed: %+v", lab.Sweep)
	}
}

func TestWorkersFor(t *testing.T) {
	for qps, want := range map[float64]int{1: DefaultClusterWorkers, 50: DefaultClusterWorkers, 200: 8, 201: 9, 400: 16, 1000: 40, 5000: MaxClusterWorkers} {
		if got := workersFor(qps); got != want {
			t.Errorf("workersFor(%g) = %d, want %d", qps, got, want)
		}
	}
	o, err := ClusterOptions{}.withDefaults()
	if err != nil || o.Workers != DefaultClusterWorkers || o.ClientQPS != DefaultClusterQPS {
		t.Errorf("defaults %+v, %v: want today's 8 workers at 50 requests/s", o, err)
	}
}

// TestDeleteBudget: a deletion is bounded at the client's rate, or at the
// point's measured creation pace where the API server kept a slower one.
func TestDeleteBudget(t *testing.T) {
	o := ClusterOptions{ClientQPS: 500, DeleteTimeout: 2 * time.Minute}
	tests := []struct {
		name    string
		n       int
		metrics map[string]float64
		calls   time.Duration // the deletes' share, before doubling
	}{
		{"no pace measured: the client's rate", 10000, nil, 40020 * time.Millisecond},
		{"a faster pace than the client's: the client's rate", 1000, map[string]float64{MetricClusterCreatePerSec: 400}, 4020 * time.Millisecond},
		{"a slower pace: two calls a filler at it", 10000, map[string]float64{MetricClusterCreatePerSec: 17.7}, 565254237288 * time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &clusterPoint{o: o, n: tt.n, metrics: tt.metrics}
			want := 2*tt.calls + o.DeleteTimeout + apiCallTimeout
			if got := p.deleteBudget(); got < want-time.Millisecond || got > want+time.Millisecond {
				t.Errorf("budget %v, want %v", got, want)
			}
		})
	}
}
