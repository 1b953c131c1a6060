package svctable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
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
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/kube"
)

func TestMain(m *testing.M) {
	pollInterval = 5 * time.Millisecond
	os.Exit(m.Run())
}

// testContext is a context whose API calls retry quickly.
func testContext() context.Context {
	return kube.WithRetryPolicy(context.Background(), kube.RetryPolicy{CallTimeout: 5 * time.Second, Attempts: 3, Backoff: time.Millisecond, MaxDelay: 5 * time.Millisecond})
}

// scaleClientset is a fake clientset that implements deletecollection of
// endpoint slices and gives services a cluster IP.
func scaleClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	gvr := discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	cs.PrependReactor("delete-collection", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		dc := a.(k8stesting.DeleteCollectionAction)
		sel := dc.GetListRestrictions().Labels
		l, err := cs.Tracker().List(gvr, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), dc.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		for _, es := range l.(*discoveryv1.EndpointSliceList).Items {
			if sel == nil || sel.Matches(labels.Set(es.Labels)) {
				if err := cs.Tracker().Delete(gvr, es.Namespace, es.Name); err != nil {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	})
	var ip atomic.Int32
	cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		n := ip.Add(1)
		svc.Spec.ClusterIP = fmt.Sprintf("10.96.%d.%d", n/256, n%256)
		return false, nil, nil // on to the tracker
	})
	return cs
}

// serviceNames lists the names of the services (or, with slices, the
// endpoint slices) of ns.
func serviceNames(t *testing.T, cs *fake.Clientset, ns string, slicesToo bool) (svcs, eps []string) {
	t.Helper()
	ctx := testContext()
	sl, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sl.Items {
		svcs = append(svcs, s.Name)
	}
	el, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range el.Items {
		eps = append(eps, s.Name)
	}
	slices.Sort(svcs)
	slices.Sort(eps)
	return svcs, eps
}

func TestCreateServices(t *testing.T) {
	ctx := testContext()
	for _, n := range []int{1, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cs := scaleClientset()
			created, err := CreateServices(ctx, cs, "bench", n, "svc", 8080, []string{"10.244.1.5", "10.244.2.7"}, kube.RunLabels("r1"), 16)
			if err != nil {
				t.Fatal(err)
			}
			if len(created) != n {
				t.Fatalf("%d created, want %d", len(created), n)
			}
			for i, r := range created {
				if r.Name != fmt.Sprintf("svc-%d", i) || !strings.HasPrefix(r.ClusterIP, "10.96.") {
					t.Fatalf("ref %d: %+v", i, r)
				}
			}
			svcs, eps := serviceNames(t, cs, "bench", true)
			if len(svcs) != n || !slices.Equal(svcs, eps) {
				t.Fatalf("%d services, %d slices", len(svcs), len(eps))
			}
			svc, err := cs.CoreV1().Services("bench").Get(ctx, "svc-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Selector != nil || len(svc.Spec.Ports) != 1 ||
				svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.IntVal != 8080 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP ||
				svc.Labels[kube.RunKey] != "r1" {
				t.Errorf("service %+v", svc)
			}
			es, err := cs.DiscoveryV1().EndpointSlices("bench").Get(ctx, "svc-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if es.AddressType != discoveryv1.AddressTypeIPv4 || es.Labels[discoveryv1.LabelServiceName] != "svc-0" || es.Labels[kube.RunKey] != "r1" ||
				es.Labels[discoveryv1.LabelManagedBy] != sliceManagedBy || len(es.Endpoints) != 2 || es.Endpoints[1].Addresses[0] != "10.244.2.7" ||
				!*es.Endpoints[0].Conditions.Ready || len(es.Ports) != 1 || *es.Ports[0].Port != 8080 || *es.Ports[0].Name != svc.Spec.Ports[0].Name ||
				*es.Ports[0].Protocol != corev1.ProtocolTCP {
				t.Errorf("endpointslice %+v", es)
			}
			// The slices count as ready endpoints of their service.
			if err := kube.WaitEndpoints(ctx, cs, "bench", fmt.Sprintf("svc-%d", n-1), 2, time.Second); err != nil {
				t.Error(err)
			}
		})
	}
}

// An error midway stops the creation and returns exactly what exists,
// a service whose slice failed included.
func TestCreateServicesPartial(t *testing.T) {
	ctx := testContext()
	for _, kind := range []string{"services", "endpointslices"} {
		t.Run(kind, func(t *testing.T) {
			cs := scaleClientset()
			var calls atomic.Int32
			cs.PrependReactor("create", kind, func(k8stesting.Action) (bool, runtime.Object, error) {
				// From the 100th on, for good (a passing 429 is retried).
				if calls.Add(1) >= 100 {
					return true, nil, apierrors.NewTooManyRequestsError("slow down")
				}
				return false, nil, nil
			})
			created, err := CreateServices(ctx, cs, "bench", 300, "svc", 80, []string{"10.0.0.1"}, kube.RunLabels("r1"), 8)
			if err == nil || !strings.Contains(err.Error(), "create services bench/svc-*") || !strings.Contains(err.Error(), "slow down") || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v", err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("(%d of 300 created)", len(created))) {
				t.Errorf("err = %v, with %d created", err, len(created))
			}
			svcs, _ := serviceNames(t, cs, "bench", false)
			var got []string
			for _, r := range created {
				got = append(got, r.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, svcs) {
				t.Errorf("created %d %v\nexisting %d %v", len(got), got, len(svcs), svcs)
			}
			if len(created) < 90 || len(created) > 120 {
				t.Errorf("%d created: the first error did not stop the rest", len(created))
			}
			// The caller deletes what was made by label.
			if _, err := DeleteServices(ctx, cs, "bench", kube.RunSelector("r1"), 8, time.Second); err != nil {
				t.Fatal(err)
			}
			if svcs, eps := serviceNames(t, cs, "bench", true); len(svcs)+len(eps) != 0 {
				t.Errorf("left %v %v", svcs, eps)
			}
		})
	}
}

func TestCreateServicesErrors(t *testing.T) {
	l := kube.RunLabels("r1")
	ep := []string{"10.0.0.1"}
	tests := []struct {
		name   string
		ns     string
		n      int
		prefix string
		port   int32
		eps    []string
		labels map[string]string
		err    string
	}{
		{name: "negative", ns: "ns", n: -1, prefix: "s", port: 80, eps: ep, labels: l, err: "-1 services: want 0 or more"},
		{name: "port", ns: "ns", n: 1, prefix: "s", port: 0, eps: ep, labels: l, err: "port 0 out of range"},
		{name: "no endpoints", ns: "ns", n: 1, prefix: "s", port: 80, labels: l, err: "0 endpoints: want 1 to 1000"},
		{name: "too many endpoints", ns: "ns", n: 1, prefix: "s", port: 80, eps: make([]string, 1001), labels: l, err: "1001 endpoints"},
		{name: "ipv6 endpoint", ns: "ns", n: 1, prefix: "s", port: 80, eps: []string{"fd00::1"}, labels: l, err: `endpoint "fd00::1" is not an IPv4 address`},
		{name: "bad endpoint", ns: "ns", n: 1, prefix: "s", port: 80, eps: []string{"pod-a"}, labels: l, err: `endpoint "pod-a" is not an IPv4 address`},
		{name: "no labels", ns: "ns", n: 1, prefix: "s", port: 80, eps: ep, err: "no labels"},
		{name: "bad prefix", ns: "ns", n: 1, prefix: "1svc", port: 80, eps: ep, labels: l, err: `service name "1svc-0" is not valid`},
		{name: "long prefix", ns: "ns", n: 10, prefix: strings.Repeat("s", 62), port: 80, eps: ep, labels: l, err: "is not valid"},
		{name: "bad namespace", ns: "", n: 1, prefix: "s", port: 80, eps: ep, labels: l, err: `namespace "" is not a valid namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := scaleClientset()
			created, err := CreateServices(testContext(), cs, tt.ns, tt.n, tt.prefix, tt.port, tt.eps, tt.labels, 4)
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
			if len(created) != 0 || len(cs.Actions()) != 0 {
				t.Errorf("created %v, actions %v", created, cs.Actions())
			}
		})
	}
	if created, err := CreateServices(testContext(), scaleClientset(), "ns", 0, "s", 80, ep, l, 4); err != nil || created != nil {
		t.Errorf("n = 0: %v, %v", created, err)
	}
}

func TestDeleteServices(t *testing.T) {
	ctx := testContext()
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "bench", Labels: map[string]string{"app": "x"}}}
	otherSlice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "user-abc", Namespace: "bench", Labels: map[string]string{discoveryv1.LabelServiceName: "user"}}}
	tests := []struct {
		name  string
		react func(*fake.Clientset)
		err   string
		left  int // services of the run left
	}{
		{name: "deletecollection"},
		{name: "deletecollection refused", react: func(cs *fake.Clientset) {
			cs.PrependReactor("delete-collection", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "endpointslices"}, "deletecollection")
			})
		}},
		{name: "some deletes fail", err: "delete services bench/", left: 2, react: func(cs *fake.Clientset) {
			cs.PrependReactor("delete", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if n := a.(k8stesting.DeleteAction).GetName(); n == "svc-3" || n == "svc-7" {
					return true, nil, errors.New("etcd is sad")
				}
				return false, nil, nil
			})
		}},
		{name: "never gone", err: "still present after 50ms: 1 services, 0 endpointslices (svc-5, …)", left: 1, react: func(cs *fake.Clientset) {
			cs.PrependReactor("delete", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return a.(k8stesting.DeleteAction).GetName() == "svc-5", nil, nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := scaleClientset(other, otherSlice)
			if _, err := CreateServices(ctx, cs, "bench", 20, "svc", 80, []string{"10.0.0.1"}, kube.RunLabels("r1"), 4); err != nil {
				t.Fatal(err)
			}
			if tt.react != nil {
				tt.react(cs)
			}
			removed, err := DeleteServices(ctx, cs, "bench", kube.RunSelector("r1"), 4, 50*time.Millisecond)
			if tt.err == "" && err != nil {
				t.Fatal(err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
			if tt.name == "some deletes fail" && !strings.Contains(err.Error(), "2 of 20 services not deleted, the first: delete service bench/svc-") {
				t.Errorf("err = %v", err)
			}
			if tt.name != "never gone" && removed != 20-tt.left {
				t.Errorf("removed %d, want %d", removed, 20-tt.left)
			}
			svcs, eps := serviceNames(t, cs, "bench", true)
			if len(svcs) != 1+tt.left || !slices.Contains(svcs, "user") || !slices.Equal(eps, []string{"user-abc"}) {
				t.Errorf("left %v %v", svcs, eps)
			}
		})
	}
	if _, err := DeleteServices(ctx, scaleClientset(), "bench", "", 4, time.Second); err == nil || !strings.Contains(err.Error(), "empty label selector refused") {
		t.Errorf("empty selector: %v", err)
	}
}

func TestForEach(t *testing.T) {
	var n atomic.Int32
	failed, err := forEach(testContext(), 0, 50, false, func(_ context.Context, i int) error {
		n.Add(1)
		if i%10 == 0 {
			return fmt.Errorf("call %d", i)
		}
		return nil
	})
	if n.Load() != 50 || failed != 5 || err == nil {
		t.Errorf("go on: %d calls, %d failed, %v", n.Load(), failed, err)
	}
	ctx, cancel := context.WithCancel(testContext())
	cancel()
	n.Store(0)
	failed, err = forEach(ctx, 4, 1000, false, func(context.Context, int) error { n.Add(1); return nil })
	if !errors.Is(err, context.Canceled) || failed != 0 || n.Load() != 0 {
		t.Errorf("cancelled: %d calls, %d failed, %v", n.Load(), failed, err)
	}
}
