package kube

import (
	"context"
	"errors"
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
	return CreateBuiltService(ctx, cs, BuildService(ns, runID, name, selector, ports, typ, opts...))
}

// BuildService is the service CreateService creates (for preflight.Check to
// dry-run before it is created).
func BuildService(ns, runID, name string, selector map[string]string, ports []corev1.ServicePort, typ corev1.ServiceType, opts ...func(*corev1.Service)) *corev1.Service {
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
	return svc
}

// CreateBuiltService creates svc (BuildService's), retried as every
// create is.
func CreateBuiltService(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service) (*corev1.Service, error) {
	ns, name := svc.Namespace, svc.Name
	svcs := cs.CoreV1().Services(ns)
	got, err := CreateOwn(ctx, "create service "+ns+"/"+name, svc,
		func(ctx context.Context) (*corev1.Service, error) {
			return svcs.Create(ctx, svc, metav1.CreateOptions{})
		},
		func(ctx context.Context) (*corev1.Service, error) { return svcs.Get(ctx, name, metav1.GetOptions{}) })
	if err != nil {
		return nil, err
	}
	Logger(ctx).Debug("service created", "service", ns+"/"+name, "clusterIP", got.Spec.ClusterIP)
	return got, nil
}

// WaitEndpoints waits, at most timeout, until service ns/service has at
// least want ready endpoints in its EndpointSlices (for a dual-stack
// service, in the slices of one address family).
func WaitEndpoints(ctx context.Context, cs kubernetes.Interface, ns, service string, want int, timeout time.Duration) error {
	got := 0
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var list *discoveryv1.EndpointSliceList
		transient, err := Once(ctx, "list endpointslices of service "+ns+"/"+service, func(ctx context.Context) (err error) {
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

// WaitLoadBalancer waits, at most timeout polling every interval, until
// LoadBalancer service ns/name has an address: its first ingress IP, else
// its host name (AWS's load balancers have names only). It returns the
// address, or an error saying how long it waited and the service's last
// condition and how long it really waited. Passing API errors (429, 5xx,
// timeouts) are "not yet"; a refusal (403, 404) ends the wait at once.
func WaitLoadBalancer(ctx context.Context, cs kubernetes.Interface, ns, name string, interval, timeout time.Duration) (string, error) {
	start := time.Now()
	var last *corev1.Service
	addr := ""
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		var s *corev1.Service
		transient, err := Once(ctx, "get service "+ns+"/"+name, func(ctx context.Context) (err error) {
			s, err = cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		})
		if transient {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last, addr = s, lbAddress(s)
		return addr != "", nil
	})
	switch {
	case err == nil:
		return addr, nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		msg := fmt.Sprintf("the cluster gave the LoadBalancer service no address within %v (waited %.1fs; no load-balancer controller, or its quota)",
			timeout, time.Since(start).Seconds())
		if last != nil && len(last.Status.Conditions) > 0 {
			c := last.Status.Conditions[len(last.Status.Conditions)-1]
			msg += ": " + c.Reason + " " + c.Message
		}
		return "", errors.New(msg)
	case wait.Interrupted(err):
		return "", fmt.Errorf("wait for the address of service %s/%s: %w", ns, name, ctx.Err())
	default:
		return "", err
	}
}

// lbAddress is a LoadBalancer service's first ingress address: its IP,
// else its host name; "" if none.
func lbAddress(s *corev1.Service) string {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}
