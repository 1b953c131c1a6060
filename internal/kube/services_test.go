package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

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
