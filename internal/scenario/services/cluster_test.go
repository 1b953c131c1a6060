package services

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/kubetest"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

const testNS = "bench"

// testPlace is the client pod of the fake cluster.
type testPlace string

func (p testPlace) String() string { return string(p) }

// fakeCluster is a fake clientset that behaves as an API server does for
// the point (cluster IPs and UIDs on services, deletecollection of
// endpoint slices), records what was created and the request bodies'
// sizes, and a fake `agent watch` that answers from the clientset's
// state: the VIP answers while its service has an EndpointSlice.
type fakeCluster struct {
	cs *fake.Clientset

	mu      sync.Mutex
	created []string // "service/NAME", "endpointslice/NAME" in order
	goLines []string // what had been created when each go line arrived
	bytes   int
	watches []string          // the watches' args
	names   map[string]string // VIP:PORT → service name

	// failures and behaviours
	failService    func(name string) bool // the create of this service fails
	failSlice      func(name string) bool
	failDelete     bool   // deleting services fails
	noClusterIP    bool   // services get no cluster IP
	agentErr       error  // the agent fails at once
	neverChange    string // the watch with this --want never sees the change
	neverReady     string // the watch with this --want never gets ready
	alreadyWant    string // the watch with this --want finds the target already in it
	cancelOnWatch  func() // called when a watch starts
	cniUsageCalled atomic.Bool
	cniWindows     atomic.Int32               // CNIUsage calls
	cniCPU         func(window int32) float64 // the CNI's CPU over the window-th call (nil: 42 mCPU)
	refuse         error                      // the dry runs' answer (nil: admitted)
	dryRuns        []string                   // the resources dry-run, in order
}

func newFakeCluster(objs ...runtime.Object) *fakeCluster {
	f := &fakeCluster{cs: fake.NewClientset(objs...), names: map[string]string{}}
	tracker := f.cs.Tracker()
	gvr := discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	f.cs.PrependReactor("delete-collection", "endpointslices", kubetest.DeleteCollectionReactor(tracker,
		map[schema.GroupVersionResource]schema.GroupVersionKind{gvr: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")}))
	var ip atomic.Int32
	f.cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failService != nil && f.failService(svc.Name) {
			return true, nil, fmt.Errorf("injected failure creating service %s", svc.Name)
		}
		f.bytes += encodedSize(svc) // the request as sent
		f.created = append(f.created, "service/"+svc.Name)
		n := ip.Add(1)
		if !f.noClusterIP {
			svc.Spec.ClusterIP = fmt.Sprintf("10.96.%d.%d", n/256, n%256)
		}
		svc.UID = types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n))
		return false, nil, nil // on to the tracker
	})
	f.cs.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sl := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failSlice != nil && f.failSlice(sl.Name) {
			return true, nil, fmt.Errorf("injected failure creating endpointslice %s", sl.Name)
		}
		f.bytes += encodedSize(sl)
		f.created = append(f.created, "endpointslice/"+sl.Name)
		return false, nil, nil
	})
	f.cs.PrependReactor("delete", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		if f.failDelete {
			return true, nil, errors.New("injected failure deleting a service")
		}
		return false, nil, nil
	})
	// A dry run (the point's admission check) persists nothing, as on an
	// API server; refuse, if set, is the cluster's admission's answer.
	f.cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c, ok := a.(k8stesting.CreateActionImpl)
		if !ok || len(c.GetCreateOptions().DryRun) == 0 {
			return false, nil, nil
		}
		f.mu.Lock()
		f.dryRuns = append(f.dryRuns, a.GetResource().Resource)
		f.mu.Unlock()
		if f.refuse != nil {
			return true, nil, f.refuse
		}
		return true, c.GetObject(), nil
	})
	return f
}

// access is the cluster.Access of the fake cluster.
func (f *fakeCluster) access() *cluster.Access {
	return &cluster.Access{
		Clientset: f.cs, Namespace: testNS, RunID: "r1",
		Labels: kube.RunLabels("r1"),
		Client: testPlace("bench/cli-a"),
		Allowed: cluster.ServerPod{Name: "srv-b", IP: "10.244.1.7", Port: engine.DefaultPort, ServicePort: 12871, HTTPPort: 8080,
			Labels: map[string]string{"role": "srv-b"}},
		Other: cluster.ServerPod{Name: "srv-a", IP: "10.244.0.7", Port: engine.DefaultPort},
		Agent: f.agent,
		CNIUsage: func(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
			f.cniUsageCalled.Store(true)
			w := f.cniWindows.Add(1)
			cpu := 42.0
			if f.cniCPU != nil {
				cpu = f.cniCPU(w)
			}
			t0 := time.Now()
			err := fn(ctx)
			if cpu < 0 {
				return nil, "the CNI runs no pods", err
			}
			return map[string]float64{"cni_cpu_millicores": cpu, "cni_memory_bytes": 3 << 20, "cni_usage_window_seconds": time.Since(t0).Seconds()},
				"left out: cilium-operator (node n3)", err
		},
	}
}

// answers says whether target (VIP:PORT) answers: a service has that
// cluster IP and port, and an EndpointSlice of it exists.
func (f *fakeCluster) answers(ctx context.Context, target string) bool {
	f.mu.Lock()
	name, ok := f.names[target]
	f.mu.Unlock()
	if !ok {
		svcs, err := f.cs.CoreV1().Services(testNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range svcs.Items {
			if s.Spec.ClusterIP != "" && len(s.Spec.Ports) > 0 && fmt.Sprintf("%s:%d", s.Spec.ClusterIP, s.Spec.Ports[0].Port) == target {
				name, ok = s.Name, true
			}
		}
		if !ok {
			return false
		}
		f.mu.Lock()
		f.names[target] = name
		f.mu.Unlock()
	}
	if _, err := f.cs.CoreV1().Services(testNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return false
	}
	_, err := f.cs.DiscoveryV1().EndpointSlices(testNS).Get(ctx, name, metav1.GetOptions{})
	return err == nil
}

// agent is a fake `cnibench k8s agent watch`: the same protocol (ready on
// stderr, a go line on stdin, JSON on stdout) with the state taken from
// the clientset.
func (f *fakeCluster) agent(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f.mu.Lock()
	f.watches = append(f.watches, pl.String()+" "+strings.Join(args, " "))
	f.mu.Unlock()
	if f.cancelOnWatch != nil {
		f.cancelOnWatch()
	}
	if f.agentErr != nil {
		return f.agentErr
	}
	if len(args) == 0 || args[0] != "watch" {
		return fmt.Errorf("agent %v: not a watch", args)
	}
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	target := fs.String("target", "", "")
	want := fs.String("want", "", "")
	interval := fs.Duration("interval", 0, "")
	fs.Duration("timeout", 0, "")
	wait := fs.Duration("wait", 0, "")
	confirm := fs.Duration("confirm", 0, "")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *interval <= 0 || *wait <= 0 || *confirm < 0 {
		return fmt.Errorf("agent watch: bad durations in %v", args)
	}
	wantOK := *want == agent.WantAnswers
	w := agent.Watch{Schema: agent.SchemaWatch, Target: *target, Want: *want, ResolutionSeconds: interval.Seconds(), Errors: []string{}}
	write := func() error { return json.NewEncoder(stdout).Encode(w) }
	if f.alreadyWant == *want || f.answers(ctx, *target) == wantOK {
		w.Error = *target + " was already " + *want + " before the change: nothing to measure"
		return write()
	}
	w.Before = true
	if f.neverReady == *want {
		<-ctx.Done()
		return ctx.Err()
	}
	fmt.Fprintln(stderr, "ready")
	if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
		w.Error = "reading the go signal: " + err.Error()
		return write()
	}
	f.mu.Lock()
	f.goLines = append(f.goLines, strings.Join(f.created, ","))
	f.mu.Unlock()
	t0 := time.Now()
	for {
		if f.neverChange != *want && f.answers(ctx, *target) == wantOK {
			w.Changed, w.AfterSeconds = true, time.Since(t0).Seconds()
			w.Probes, w.Answered = 10, 5
			if wantOK {
				w.FirstConnectSeconds = fakeFirstConnect
			}
			return write()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(t0) > 300*time.Millisecond {
			w.Probes = 20
			return write()
		}
		time.Sleep(time.Millisecond)
	}
}

// fakeFirstConnect is the fake watch's first answering connect time.
const fakeFirstConnect = 0.0004

// left lists the services and endpoint slices in the namespace.
func (f *fakeCluster) left(t *testing.T) (svcs, slices_ []string) {
	t.Helper()
	ctx := context.Background()
	sl, err := f.cs.CoreV1().Services(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sl.Items {
		svcs = append(svcs, s.Name)
	}
	el, err := f.cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range el.Items {
		slices_ = append(slices_, s.Name)
	}
	slices.Sort(svcs)
	slices.Sort(slices_)
	return svcs, slices_
}

// runService is the run's own service, which a point must leave alone.
func runService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cnibench-r1-svc", Namespace: testNS, Labels: kube.RunLabels("r1")},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.200.1", Ports: []corev1.ServicePort{{Port: 12871}}}}
}

// testOptions keep the fake watches and deletions quick.
func testOptions() ClusterOptions {
	return ClusterOptions{WatchInterval: time.Millisecond, WatchWait: 5 * time.Second, WatchConfirm: 10 * time.Millisecond, DeleteTimeout: 5 * time.Second,
		SettleWindow: 10 * time.Millisecond, SettleTimeout: 2 * time.Second}
}

// TestCloseSettles: Close waits, after the removal, until the CNI's
// pods use less than SettleCPU over a window, records how long and the
// last window's CPU, and gives up at SettleTimeout without an error.
func TestCloseSettles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cpu     func(w int32) float64
		windows int32 // settle windows measured (CNIUsage calls after Prepare's one)
		settled bool
	}{
		{name: "idle at once", cpu: func(int32) float64 { return 42 }, windows: 1, settled: true},
		// Prepare's creation is window 1; the tear-down keeps the agent
		// busy for the first three settle windows.
		{name: "busy, then idle", cpu: func(w int32) float64 { return map[bool]float64{true: 1458, false: 120}[w <= 4] }, windows: 4, settled: true},
		{name: "never idle", cpu: func(int32) float64 { return 900 }, settled: false},
		// No usage (a CNI without pods, cgroups unreadable): nothing to
		// wait for, no settle metric.
		{name: "no usage", cpu: func(int32) float64 { return -1 }, windows: 1, settled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(runService())
			f.cniCPU = tc.cpu
			o := testOptions()
			o.SettleTimeout = 300 * time.Millisecond
			prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), 3, o)
			if err != nil {
				t.Fatal(err)
			}
			before := f.cniWindows.Load()
			t0 := time.Now()
			m, err := prep.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(t0)
			got := f.cniWindows.Load() - before
			if tc.settled && got != tc.windows {
				t.Errorf("%d settle windows, want %d", got, tc.windows)
			}
			if tc.name == "no usage" {
				if _, ok := m[MetricClusterSettleSeconds]; ok || took > time.Second {
					t.Errorf("without the CNI's usage: settle metrics %v, Close took %s", m, took)
				}
				return
			}
			cpu, ok := m[MetricClusterSettleCPU]
			if !ok || m[MetricClusterSettleSeconds] <= 0 {
				t.Fatalf("settle metrics missing: %v", m)
			}
			if settled := cpu < DefaultSettleCPU; settled != tc.settled {
				t.Errorf("last window %g mCPU: settled %v, want %v", cpu, settled, tc.settled)
			}
			if !tc.settled && (took < o.SettleTimeout || took > o.SettleTimeout+5*time.Second) {
				t.Errorf("Close took %s with a CNI that never settles, want about the bound %s", took, o.SettleTimeout)
			}
		})
	}
}

func TestPrepareClusterAndClose(t *testing.T) {
	for _, n := range []int{1, 2, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := context.Background()
			f := newFakeCluster(runService())
			ca := f.access()
			prep, err := PrepareCluster(ctx, scenario.Env{Datapath: "cni-bridge"}, ca, n, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			svcs, sls := f.left(t)
			if len(svcs) != n+1 || len(sls) != n {
				t.Fatalf("after Prepare: %d services (the run's included), %d slices, want %d and %d", len(svcs), len(svcs), n+1, n)
			}
			// Every object carries the run's labels and the point's.
			sel := labels.SelectorFromSet(kube.RunLabels("r1")).String() + "," + LabelKeyScenario + "=" + ScenarioName + "," + LabelKeyPoint
			ls, err := f.cs.CoreV1().Services(testNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil || len(ls.Items) != n {
				t.Fatalf("services labelled %s: %d, %v; want %d", sel, len(ls.Items), err, n)
			}
			le, err := f.cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil || len(le.Items) != n {
				t.Fatalf("slices labelled %s: %d, %v; want %d", sel, len(le.Items), err, n)
			}
			for _, s := range le.Items {
				if len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != ca.Allowed.IP || *s.Ports[0].Port != int32(ca.Allowed.ServicePort) ||
					len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID == "" {
					t.Fatalf("slice %s: %+v", s.Name, s)
				}
			}

			// The measured service comes last, its slice after the go line.
			f.mu.Lock()
			created, goLines, sent := slices.Clone(f.created), slices.Clone(f.goLines), f.bytes
			f.mu.Unlock()
			if len(created) != 2*n {
				t.Fatalf("created %v, want %d objects", created, 2*n)
			}
			p := prep.(*clusterPoint)
			m := p.measuredName()
			if created[2*n-2] != "service/"+m || created[2*n-1] != "endpointslice/"+m {
				t.Fatalf("the measured service is not last: %v", created)
			}
			// The go line is sent before the measured slice's create call,
			// but both travel at once (the line to the watch's reader, the
			// create to the API server), so the fake watch may read it
			// just after the slice exists: nothing later than that.
			if len(goLines) != 1 || (goLines[0] != strings.Join(created[:2*n-1], ",") && goLines[0] != strings.Join(created, ",")) {
				t.Fatalf("go line came with %v created, want all but the measured slice (%v), or all", goLines, created[:2*n-1])
			}

			mt := prep.Metrics()
			want := map[string]float64{
				MetricClusterServices: float64(n), MetricClusterAPIObjects: float64(2 * n), MetricClusterAPIBytes: float64(sent),
				MetricClusterWatchResolution: 0.001, MetricClusterCNICPU: 42, MetricClusterCNIMemory: 3 << 20,
			}
			for k, v := range want {
				if mt[k] != v {
					t.Errorf("metric %s = %v, want %v", k, mt[k], v)
				}
			}
			if mt[MetricClusterFirstConnect] != fakeFirstConnect {
				t.Errorf("metric %s = %v, want the watch's %v", MetricClusterFirstConnect, mt[MetricClusterFirstConnect], fakeFirstConnect)
			}
			for _, k := range []string{MetricClusterProgrammingSeconds, MetricClusterCNIWindow} {
				if _, ok := mt[k]; !ok {
					t.Errorf("metric %s missing", k)
				}
			}
			_, hasFillers := mt[MetricClusterFillersSeconds]
			_, hasRate := mt[MetricClusterCreatePerSec]
			if hasFillers != (n > 1) || hasRate != (n > 1) {
				t.Errorf("fillers' metrics with %d services: %v", n, mt)
			}
			if !f.cniUsageCalled.Load() {
				t.Error("CNIUsage was not called")
			}
			cfg := prep.Config()
			if !strings.HasPrefix(cfg["service_vip"], "10.96.") || !strings.HasSuffix(cfg["service_vip"], ":12871") ||
				!strings.HasPrefix(cfg["service_backends"], "10.244.1.7:12871") || !strings.Contains(cfg["svc_cluster_cni_usage"], "left out") ||
				cfg["svc_cluster_kube_proxy"] != "not measured: the deployment gives no kube-proxy usage" || cfg["service_datapath"] != "cni-bridge" {
				t.Errorf("config %v", cfg)
			}
			if _, ok := cfg["svc_cluster_create_pace"]; ok != (n > 1) {
				t.Errorf("create pace with %d services: %q", n, cfg["svc_cluster_create_pace"])
			}

			tg, ok := prep.(scenario.Targeter)
			if !ok {
				t.Fatal("not a Targeter")
			}
			for _, c := range ClusterCells() {
				got, err := tg.Target(c)
				if err != nil || got.Client != ca.Client || strings.Join(got.Args, " ") != "--service "+cfg["service_vip"] {
					t.Errorf("%+v: target %+v, %v", c, got, err)
				}
			}
			for _, c := range []scenario.Cell{{Test: engine.HTTP, Path: PathPodToService}, {Test: engine.TCPRR, Path: PathHairpin}, {Test: engine.UDPStream}} {
				if _, err := tg.Target(c); err == nil {
					t.Errorf("%+v: no error", c)
				}
			}

			cm, err := prep.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{MetricClusterRemovalSeconds, MetricClusterRemovalRefusedSeconds,
				MetricClusterSettleSeconds, MetricClusterSettleCPU} {
				if _, ok := cm[k]; !ok {
					t.Errorf("close metric %s missing: %v", k, cm)
				}
			}
			svcs, sls = f.left(t)
			if !slices.Equal(svcs, []string{"cnibench-r1-svc"}) || len(sls) != 0 {
				t.Fatalf("after Close: services %v, slices %v; want the run's service only", svcs, sls)
			}
			f.mu.Lock()
			watches := slices.Clone(f.watches)
			f.mu.Unlock()
			if len(watches) != 2 || !strings.Contains(watches[0], "--want answers") || !strings.Contains(watches[1], "--want refused") ||
				!strings.HasPrefix(watches[0], "bench/cli-a watch --target "+cfg["service_vip"]) {
				t.Errorf("watches %q", watches)
			}
			if m, err := prep.Close(ctx); m != nil || err != nil {
				t.Errorf("second Close: %v, %v", m, err)
			}
		})
	}
}

// The request bodies counted are the ones the fake API server received,
// fillers included (their shape is svctable.CreateServices').
func TestClusterAPIBytesMatchRequests(t *testing.T) {
	f := newFakeCluster()
	prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), 120, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(context.Background())
	f.mu.Lock()
	sent := f.bytes
	f.mu.Unlock()
	if got := prep.Metrics()[MetricClusterAPIBytes]; got != float64(sent) || sent < 120*2*300 {
		t.Fatalf("%s = %v, the API server got %d bytes", MetricClusterAPIBytes, got, sent)
	}
}

func TestPrepareClusterRefuses(t *testing.T) {
	noAgent := func(a *cluster.Access) { a.Agent = nil }
	tests := []struct {
		name    string
		n       int
		o       ClusterOptions
		access  func(*cluster.Access)
		tooBig  bool
		wantErr string
	}{
		{name: "zero", n: 0, wantErr: "want at least 1"},
		{name: "above the default bound", n: DefaultClusterMaxServices + 1, tooBig: true, wantErr: "1001 services: more than 1000 per point on a cluster, refused without --cluster-scale"},
		{name: "above a raised bound", n: ClusterScaleMaxServices + 1, o: ClusterOptions{MaxServices: ClusterScaleMaxServices}, tooBig: true, wantErr: "more than 16000 per point on a cluster, even with --cluster-scale"},
		{name: "above a lowered bound", n: 11, o: ClusterOptions{MaxServices: 10}, tooBig: true, wantErr: "11 services"},
		{name: "negative option", n: 1, o: ClusterOptions{Workers: -1}, wantErr: "negative"},
		{name: "interval", n: 1, o: ClusterOptions{WatchInterval: 2 * time.Second}, wantErr: "watch interval"},
		{name: "confirm above wait", n: 1, o: ClusterOptions{WatchWait: time.Second, WatchConfirm: 2 * time.Second}, wantErr: "watch confirm"},
		{name: "no agent", n: 1, access: noAgent, wantErr: "no client pod"},
		{name: "no labels", n: 1, access: func(a *cluster.Access) { a.Labels = nil }, wantErr: "no run labels"},
		{name: "no service port", n: 1, access: func(a *cluster.Access) { a.Allowed.ServicePort = 0 }, wantErr: "no service-mode port"},
		{name: "ipv6 server", n: 1, access: func(a *cluster.Access) { a.Allowed.IP = "fd00::7" }, wantErr: "not IPv4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCluster()
			ca := f.access()
			if tt.access != nil {
				tt.access(ca)
			}
			prep, err := PrepareCluster(context.Background(), scenario.Env{}, ca, tt.n, tt.o)
			if err == nil {
				prep.Close(context.Background())
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line with %q", err, tt.wantErr)
			}
			if errors.Is(err, scenario.ErrTooLarge) != tt.tooBig {
				t.Errorf("error %q: too large %v, want %v", err, errors.Is(err, scenario.ErrTooLarge), tt.tooBig)
			}
			if tt.tooBig {
				if !strings.Contains(err.Error(), ClusterScaleFlag) {
					t.Errorf("error %q does not name %s", err, ClusterScaleFlag)
				}
				r := scenario.Point{Skip: err}.SkipReason()
				if !strings.HasPrefix(r, "too large: ") || strings.HasPrefix(r, "too large: too large") {
					t.Errorf("recorded %q", r)
				}
			}
			if acts := f.cs.Actions(); len(acts) != 0 {
				t.Errorf("refused point made %d API calls, the first %v", len(acts), acts[0])
			}
		})
	}
}

// The point dry-runs its objects first: a cluster whose admission
// refuses services skips the point with the webhook's reason and a fix,
// before any filler exists; one that admits them runs it.
func TestPrepareClusterAdmission(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}
	t.Run("refused", func(t *testing.T) {
		f := newFakeCluster(ns)
		f.refuse = apierrors.NewForbidden(corev1.Resource("services"), "x",
			errors.New(`admission webhook "validation.gatekeeper.sh" denied the request: [no-clusterip] ClusterIP services are not allowed`))
		prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), 3, testOptions())
		if err == nil {
			prep.Close(context.Background())
			t.Fatal("no error")
		}
		if !errors.Is(err, cluster.ErrRefused) || !errors.Is(err, backend.ErrNotSupported) {
			t.Errorf("error %q does not wrap cluster.ErrRefused and backend.ErrNotSupported", err)
		}
		r := scenario.Point{Skip: err}.SkipReason()
		for _, want := range []string{"skipped: ", "3 services", `webhook "validation.gatekeeper.sh"`, "ClusterIP services are not allowed", "fix: ", "namespace " + testNS} {
			if !strings.Contains(r, want) {
				t.Errorf("recorded %q, lacks %q", r, want)
			}
		}
		if strings.Contains(r, "\n") {
			t.Errorf("recorded %q: not one line", r)
		}
		if len(f.created) != 0 || f.cniUsageCalled.Load() {
			t.Errorf("a refused point created %v (CNI usage read: %v)", f.created, f.cniUsageCalled.Load())
		}
		if svcs, sl := f.left(t); len(svcs)+len(sl) != 0 {
			t.Errorf("left %v %v", svcs, sl)
		}
	})
	t.Run("admitted", func(t *testing.T) {
		f := newFakeCluster(ns)
		prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), 3, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer prep.Close(context.Background())
		if want := []string{"services", "endpointslices"}; !slices.Equal(f.dryRuns, want) {
			t.Errorf("dry runs %v, want %v", f.dryRuns, want)
		}
		if len(f.created) != 6 {
			t.Errorf("created %v, want 3 services and 3 slices", f.created)
		}
	})
}

func TestClusterTooLarge(t *testing.T) {
	tests := []struct {
		n    int
		o    ClusterOptions
		want bool
	}{
		{1, ClusterOptions{}, false},
		{DefaultClusterMaxServices, ClusterOptions{}, false},
		{DefaultClusterMaxServices + 1, ClusterOptions{}, true},
		{10000, ClusterOptions{MaxServices: ClusterScaleMaxServices}, false},
		{ClusterScaleMaxServices, ClusterOptions{MaxServices: ClusterScaleMaxServices}, false},
		{ClusterScaleMaxServices + 1, ClusterOptions{MaxServices: ClusterScaleMaxServices}, true},
		{101, ClusterOptions{MaxServices: 100}, true},
	}
	for _, tt := range tests {
		err := ClusterTooLarge(tt.n, tt.o)
		if (err != nil) != tt.want || (err != nil && !errors.Is(err, scenario.ErrTooLarge)) {
			t.Errorf("ClusterTooLarge(%d, %+v) = %v, want too large %v", tt.n, tt.o, err, tt.want)
		}
	}
}

// A point raised above the default bound runs.
func TestPrepareClusterScale(t *testing.T) {
	if testing.Short() {
		t.Skip("1001 services through the fake clientset take about 10 s")
	}
	f := newFakeCluster()
	o := testOptions()
	o.MaxServices = ClusterScaleMaxServices
	prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), DefaultClusterMaxServices+1, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prep.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if svcs, sls := f.left(t); len(svcs)+len(sls) != 0 {
		t.Fatalf("left %d services, %d slices", len(svcs), len(sls))
	}
}

// A Prepare that fails at any step leaves nothing (but the run's own
// objects) behind.
func TestPrepareClusterFailureLeavesNothing(t *testing.T) {
	measured := func(name string) bool { return strings.HasSuffix(name, "-m") }
	tests := []struct {
		name    string
		set     func(*fakeCluster, context.CancelFunc)
		wantErr string
	}{
		{"a filler fails", func(f *fakeCluster, _ context.CancelFunc) {
			f.failService = func(name string) bool { return strings.HasSuffix(name, "-f-17") }
		}, "filler services"},
		{"a filler's slice fails", func(f *fakeCluster, _ context.CancelFunc) {
			f.failSlice = func(name string) bool { return strings.HasSuffix(name, "-f-3") }
		}, "filler services"},
		{"the measured service fails", func(f *fakeCluster, _ context.CancelFunc) { f.failService = measured }, "create the measured service"},
		{"the measured slice fails", func(f *fakeCluster, _ context.CancelFunc) { f.failSlice = measured }, "create the measured service's endpointslice"},
		{"no cluster IP", func(f *fakeCluster, _ context.CancelFunc) { f.noClusterIP = true }, "no IPv4 cluster IP"},
		{"the agent fails", func(f *fakeCluster, _ context.CancelFunc) { f.agentErr = errors.New("exec: pod not found") }, "pod not found"},
		{"the VIP answers before", func(f *fakeCluster, _ context.CancelFunc) { f.alreadyWant = agent.WantAnswers }, "already answers"},
		{"the VIP never answers", func(f *fakeCluster, _ context.CancelFunc) { f.neverChange = agent.WantAnswers }, "did not answer"},
		{"interrupted", func(f *fakeCluster, cancel context.CancelFunc) {
			f.neverReady = agent.WantAnswers
			f.cancelOnWatch = cancel
		}, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := newFakeCluster(runService())
			tt.set(f, cancel)
			prep, err := PrepareCluster(ctx, scenario.Env{}, f.access(), 30, testOptions())
			if err == nil {
				prep.Close(context.Background())
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") || errors.Is(err, scenario.ErrTooLarge) {
				t.Errorf("error %q, want one line with %q", err, tt.wantErr)
			}
			svcs, sls := f.left(t)
			if !slices.Equal(svcs, []string{"cnibench-r1-svc"}) || len(sls) != 0 {
				t.Fatalf("after a failed Prepare: services %v, slices %v", svcs, sls)
			}
		})
	}
}

func TestCloseFailures(t *testing.T) {
	tests := []struct {
		name    string
		set     func(*fakeCluster)
		wantErr string
		left    bool
	}{
		{"the VIP keeps answering", func(f *fakeCluster) { f.neverChange = agent.WantRefused }, "removal of the measured VIP was not seen", false},
		{"the removal watch is not ready", func(f *fakeCluster) { f.alreadyWant = agent.WantRefused }, "already refused", false},
		{"deletion fails", func(f *fakeCluster) { f.failDelete = true }, "remove 5 services", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCluster()
			o := testOptions()
			o.DeleteTimeout = time.Second
			prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), 5, o)
			if err != nil {
				t.Fatal(err)
			}
			tt.set(f)
			m, err := prep.Close(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || m != nil {
				t.Fatalf("Close: %v, %v; want an error with %q", m, err, tt.wantErr)
			}
			svcs, sls := f.left(t)
			if left := len(svcs)+len(sls) > 0; left != tt.left {
				t.Fatalf("after Close: services %v, slices %v", svcs, sls)
			}
		})
	}
}

// A Close whose context is already cancelled still removes everything
// (without the removal watch).
func TestCloseCancelled(t *testing.T) {
	f := newFakeCluster()
	prep, err := PrepareCluster(context.Background(), scenario.Env{}, f.access(), 3, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err := prep.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m[MetricClusterRemovalRefusedSeconds]; ok {
		t.Errorf("removal watched with a cancelled context: %v", m)
	}
	if svcs, sls := f.left(t); len(svcs)+len(sls) != 0 {
		t.Fatalf("left %v %v", svcs, sls)
	}
}

// Every metric a cluster point reports is documented (metrics.go,
// registered with the scenario).
func TestClusterMetricsDocumented(t *testing.T) {
	for _, name := range []string{MetricClusterServices, MetricClusterAPIObjects, MetricClusterAPIBytes, MetricClusterFillersSeconds,
		MetricClusterCreatePerSec, MetricClusterProgrammingSeconds, MetricClusterWatchResolution, MetricClusterCNICPU,
		MetricClusterCNIMemory, MetricClusterCNIWindow, MetricClusterRemovalSeconds, MetricClusterRemovalRefusedSeconds,
		MetricClusterFirstConnect, MetricClusterProxyCPU, MetricClusterProxyMemory, MetricClusterProxyWindow, MetricClusterSettleProxyCPU} {
		if _, ok := result.Known(name); !ok {
			t.Errorf("%s is not a known metric", name)
		}
	}
	for from, to := range cniUsageMetrics {
		if !strings.HasPrefix(to, "svc_cluster_cni_") || !strings.HasPrefix(from, "cni_") {
			t.Errorf("usage metric %s → %s", from, to)
		}
	}
	for from, to := range proxyUsageMetrics {
		if !strings.HasPrefix(to, "svc_cluster_proxy_") || !strings.HasPrefix(from, "proxy_") {
			t.Errorf("usage metric %s → %s", from, to)
		}
	}
}
