package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A look that fails after WaitLoadBalancer's deadline passed (a slow API
// server's 500) ends in the timeout's message, not in that 500: the
// flake CI met on 2026-11-29 when the 150 ms deadline fell inside a look.
func TestWaitLoadBalancerLookStraddlesDeadline(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(120 * time.Millisecond)
		return true, nil, apierrors.NewInternalError(errors.New("boom"))
	})
	_, err := WaitLoadBalancer(context.Background(), cs, "ns", "lb", 10*time.Millisecond, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no address within 100ms") {
		t.Fatalf("err = %v, want the timeout's message", err)
	}
}

func TestCreateService(t *testing.T) {
	cs := fake.NewClientset()
	ports := []corev1.ServicePort{{Name: "tcp", Port: 80, TargetPort: intstr.FromInt32(5201), Protocol: corev1.ProtocolTCP}}
	svc, err := CreateService(context.Background(), cs, "ns", "r1", "srv", map[string]string{RoleKey: "server"}, ports, corev1.ServiceTypeNodePort)
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Selector[RoleKey] != "server" || svc.Spec.Ports[0].TargetPort.IntVal != 5201 || svc.Labels[RunKey] != "r1" {
		t.Errorf("service %+v", svc)
	}
	if _, err := CreateService(context.Background(), cs, "ns", "r1", "srv", nil, ports, ""); err == nil || !strings.Contains(err.Error(), "create service ns/srv") {
		t.Errorf("duplicate: err = %v", err)
	}
}

func slice(name, svc string, family discoveryv1.AddressType, ready ...*bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: family,
	}
	for _, r := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: r}})
	}
	return s
}

func TestWaitEndpoints(t *testing.T) {
	yes, no := new(true), new(false)
	tests := []struct {
		name   string
		slices []runtime.Object
		want   int
		err    string
	}{
		{name: "ready", slices: []runtime.Object{slice("a", "srv", discoveryv1.AddressTypeIPv4, yes, nil)}, want: 2},
		{name: "two slices", slices: []runtime.Object{slice("a", "srv", discoveryv1.AddressTypeIPv4, yes), slice("b", "srv", discoveryv1.AddressTypeIPv4, yes)}, want: 2},
		{name: "dual stack counts once", slices: []runtime.Object{slice("a", "srv", discoveryv1.AddressTypeIPv4, yes), slice("b", "srv", discoveryv1.AddressTypeIPv6, yes)}, want: 2,
			err: "service ns/srv: 1 of 2 endpoints ready after"},
		{name: "not ready", slices: []runtime.Object{slice("a", "srv", discoveryv1.AddressTypeIPv4, yes, no)}, want: 2, err: "1 of 2 endpoints ready"},
		{name: "other service", slices: []runtime.Object{slice("a", "other", discoveryv1.AddressTypeIPv4, yes)}, want: 1, err: "0 of 1 endpoints ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WaitEndpoints(context.Background(), fake.NewClientset(tt.slices...), "ns", "srv", tt.want, 50*time.Millisecond)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestWaitEndpointsLater(t *testing.T) {
	cs := fake.NewClientset()
	go func() {
		time.Sleep(20 * time.Millisecond)
		cs.DiscoveryV1().EndpointSlices("ns").Create(context.Background(), slice("a", "srv", discoveryv1.AddressTypeIPv4, new(true)), metav1.CreateOptions{}) //nolint:errcheck
	}()
	if err := WaitEndpoints(context.Background(), cs, "ns", "srv", 1, time.Second); err != nil {
		t.Fatal(err)
	}
}

// WaitLoadBalancer takes passing API errors (429, 500) as "not yet" and
// returns the address once the cluster gives one; without one it ends at
// its timeout, saying how long it waited; a refusal ends it at once.
func TestWaitLoadBalancer(t *testing.T) {
	lb := func(ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		s.Status.LoadBalancer.Ingress = ingress
		return s
	}
	gr := schema.GroupResource{Resource: "services"}
	tests := []struct {
		name string
		// answers are the gets' answers in turn (the last repeats): an
		// error, or the service.
		answers []any
		timeout time.Duration
		want    string
		err     []string
		gets    int // at least
	}{
		{name: "429, 500, then an address", answers: []any{apierrors.NewTooManyRequests("slow down", 0), apierrors.NewInternalError(errors.New("etcdserver: leader changed")),
			lb(), lb(corev1.LoadBalancerIngress{IP: "203.0.113.7"})}, timeout: 5 * time.Second, want: "203.0.113.7", gets: 4},
		{name: "503 then a host name", answers: []any{apierrors.NewServiceUnavailable("down"), lb(corev1.LoadBalancerIngress{Hostname: "a1.elb.example"})},
			timeout: 5 * time.Second, want: "a1.elb.example", gets: 2},
		{name: "never an address", answers: []any{apierrors.NewTooManyRequests("slow down", 0), lb()}, timeout: 150 * time.Millisecond,
			err: []string{"no address within 150ms (waited 0.", "no load-balancer controller"}, gets: 2},
		{name: "only errors", answers: []any{apierrors.NewInternalError(errors.New("boom"))}, timeout: 150 * time.Millisecond,
			err: []string{"no address within 150ms"}, gets: 2},
		{name: "forbidden: at once", answers: []any{apierrors.NewForbidden(gr, "lb", errors.New("no"))}, timeout: 5 * time.Second,
			err: []string{"get service ns/lb", "forbidden"}, gets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			gets := 0
			cs.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
				a := tt.answers[min(gets, len(tt.answers)-1)]
				gets++
				if err, ok := a.(error); ok {
					return true, nil, err
				}
				return true, a.(*corev1.Service), nil
			})
			start := time.Now()
			got, err := WaitLoadBalancer(context.Background(), cs, "ns", "lb", 10*time.Millisecond, tt.timeout)
			el := time.Since(start)
			if gets < tt.gets {
				t.Errorf("%d gets, want at least %d", gets, tt.gets)
			}
			if tt.err == nil {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", got)
			}
			for _, s := range tt.err {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error not one line: %q", err)
			}
			if el > tt.timeout+time.Second {
				t.Errorf("took %v, bound %v", el, tt.timeout)
			}
		})
	}
}
