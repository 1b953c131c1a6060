package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// CreateService creates service name of type typ (e.g. ClusterIP,
// NodePort) in namespace ns for run runID, in front of the pods that
// selector matches; each of opts may change the service before it is
// created (e.g. its IP families).
func CreateService(ctx context.Context, cs kubernetes.Interface, ns, runID, name string, selector map[string]string, ports []corev1.ServicePort, typ corev1.ServiceType, opts ...func(*corev1.Service)) (*corev1.Service, error) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: runLabels(runID)},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: selector,
			Ports:    ports,
		},
	}
	for _, o := range opts {
		o(svc)
	}
	svcs := cs.CoreV1().Services(ns)
	got, err := createOwn(ctx, "create service "+ns+"/"+name, svc,
		func(ctx context.Context) (*corev1.Service, error) {
			return svcs.Create(ctx, svc, metav1.CreateOptions{})
		},
		func(ctx context.Context) (*corev1.Service, error) { return svcs.Get(ctx, name, metav1.GetOptions{}) })
	if err != nil {
		return nil, err
	}
	logger(ctx).Debug("service created", "service", ns+"/"+name, "clusterIP", got.Spec.ClusterIP)
	return got, nil
}

// WaitEndpoints waits, at most timeout, until service ns/service has at
// least want ready endpoints in its EndpointSlices (for a dual-stack
// service, in the slices of one address family).
func WaitEndpoints(ctx context.Context, cs kubernetes.Interface, ns, service string, want int, timeout time.Duration) error {
	got := 0
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var list *discoveryv1.EndpointSliceList
		transient, err := once(ctx, "list endpointslices of service "+ns+"/"+service, func(ctx context.Context) (err error) {
			list, err = cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
				LabelSelector: discoveryv1.LabelServiceName + "=" + service,
			})
			return err
		})
		if transient {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		got = readyEndpoints(list.Items)
		return got >= want, nil
	})
	switch {
	case err == nil:
		return nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return fmt.Errorf("service %s/%s: %d of %d endpoints ready after %v", ns, service, got, want, timeout)
	case wait.Interrupted(err):
		return fmt.Errorf("wait for endpoints of service %s/%s: %w", ns, service, ctx.Err())
	default:
		return err
	}
}

// readyEndpoints counts the ready endpoints of slices, per address family,
// and returns the largest count. An endpoint whose readiness is unknown
// (nil) counts as ready, as the API says.
func readyEndpoints(slices []discoveryv1.EndpointSlice) int {
	n := map[discoveryv1.AddressType]int{}
	best := 0
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			n[s.AddressType]++
			best = max(best, n[s.AddressType])
		}
	}
	return best
}
