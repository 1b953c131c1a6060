// Package svctable is the services scenario's service table on a
// cluster's API server: n selectorless ClusterIP services, each with one
// EndpointSlice of ready endpoints (ServiceObjects), created by workers in
// bulk (CreateServices) and deleted by label (DeleteServices), every call
// bounded and retried as kube's calls are.
package svctable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube"
)

// pollInterval is how often DeleteServices looks whether the objects are
// gone, as kube's waits do (tests shorten it).
var pollInterval = 500 * time.Millisecond

// maxSliceEndpoints is the API server's limit of endpoints in one
// EndpointSlice.
const maxSliceEndpoints = 1000

// sliceManagedBy is the value of the EndpointSlices' managed-by label:
// anything but the EndpointSlice controller's, which would otherwise
// take them over.
const sliceManagedBy = "cnibench.io"

// ServiceRef is a service CreateServices created.
type ServiceRef struct {
	// Name of the service.
	Name string
	// ClusterIP the API server allocated ("" if it allocated none).
	ClusterIP string
}

// CreateServices creates n selectorless ClusterIP services in namespace
// ns, named prefix-0 … prefix-(n-1), each on TCP port port (also the target
// port) and each with one EndpointSlice (IPv4, named as the service,
// labelled kubernetes.io/service-name) holding the ready endpoints (pod
// IPv4 addresses, at most 1 000) on that port. Services and slices carry
// labels (at least one: DeleteServices finds them by it). Up to workers
// (at least 1) services are created at once, each API call bounded and
// retried as kube.RetryPolicy says (a retried create that meets the object of
// its earlier attempt takes it); the client's QPS limit (kube.LoadConfig's 50)
// is usually the pace. On the first error nothing more is started and the error is
// returned with what was created (a service whose slice failed included),
// in name order; the caller deletes by label (DeleteServices), which also
// catches a service the API server made after its call timed out.
func CreateServices(ctx context.Context, cs kubernetes.Interface, ns string, n int, prefix string, port int32, endpoints []string, labels map[string]string, workers int) (created []ServiceRef, err error) {
	what := fmt.Sprintf("create services %s/%s-*", ns, prefix)
	switch {
	case n < 0:
		return nil, fmt.Errorf("%s: %d services: want 0 or more", what, n)
	case n == 0:
		return nil, nil
	case port < 1 || port > 65535:
		return nil, fmt.Errorf("%s: port %d out of range 1-65535", what, port)
	case len(endpoints) == 0 || len(endpoints) > maxSliceEndpoints:
		return nil, fmt.Errorf("%s: %d endpoints: want 1 to %d (one EndpointSlice per service)", what, len(endpoints), maxSliceEndpoints)
	case len(labels) == 0:
		return nil, fmt.Errorf("%s: no labels: the services could not be deleted by label (pass the run's labels)", what)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return nil, fmt.Errorf("%s: namespace %q is not a valid namespace name: %s", what, ns, errs[0])
	}
	if last := prefix + "-" + strconv.Itoa(n-1); len(validation.IsDNS1035Label(last)) > 0 {
		return nil, fmt.Errorf("%s: service name %q is not valid: %s (a service name is a DNS-1035 label: lower-case letters, digits, '-', starting with a letter, at most 63 characters)", what, last, validation.IsDNS1035Label(last)[0])
	}
	if err := kube.ValidLabels(labels); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	addrs := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		a, err := netip.ParseAddr(e)
		if err != nil || !a.Is4() {
			return nil, fmt.Errorf("%s: endpoint %q is not an IPv4 address (pass the pods' IPv4 addresses)", what, e)
		}
		addrs = append(addrs, a.String())
	}
	eps := ReadyEndpoints(addrs)

	start := time.Now()
	refs := make([]ServiceRef, n)
	made := make([]bool, n)
	_, err = forEach(ctx, workers, n, true, func(ctx context.Context, i int) error {
		ref, ok, err := createService(ctx, cs, ns, prefix+"-"+strconv.Itoa(i), port, eps, labels)
		refs[i], made[i] = ref, ok
		return err
	})
	for i, ok := range made {
		if ok {
			created = append(created, refs[i])
		}
	}
	if err != nil {
		return created, fmt.Errorf("%s (%d of %d created): %w", what, len(created), n, err)
	}
	kube.Logger(ctx).Debug("services created", "namespace", ns, "prefix", prefix, "services", n, "took", time.Since(start))
	return created, nil
}

// ServiceObjects are the selectorless ClusterIP service ns/name on TCP
// port (port name "tcp") and its EndpointSlice onto the endpoints, ready,
// as CreateServices creates them; the slice is owned by the service when
// uid is known (its owner reference is set once the service exists).
func ServiceObjects(ns, name string, port int32, eps []discoveryv1.Endpoint, labels map[string]string, uid types.UID) (*corev1.Service, *discoveryv1.EndpointSlice) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(labels)},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "tcp", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)}},
		},
	}
	sl := maps.Clone(labels)
	sl[discoveryv1.LabelServiceName] = name
	sl[discoveryv1.LabelManagedBy] = sliceManagedBy
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: sl},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: new("tcp"), Protocol: new(corev1.ProtocolTCP), Port: new(port)}},
	}
	if uid != "" {
		slice.OwnerReferences = OwnedBy(name, uid)
	}
	return svc, slice
}

// ReadyEndpoints are ready endpoints at the addresses.
func ReadyEndpoints(addrs []string) []discoveryv1.Endpoint {
	eps := make([]discoveryv1.Endpoint, len(addrs))
	for i, a := range addrs {
		eps[i] = discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}
	}
	return eps
}

// OwnedBy is the owner reference of an object that service name (with
// uid) owns: it is deleted with the service, whoever deletes that.
func OwnedBy(name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: uid}}
}

// createService creates service ns/name and its EndpointSlice; made says
// whether the service exists (even when the slice failed).
func createService(ctx context.Context, cs kubernetes.Interface, ns, name string, port int32, eps []discoveryv1.Endpoint, labels map[string]string) (ref ServiceRef, made bool, err error) {
	svc, slice := ServiceObjects(ns, name, port, eps, labels, "")
	svcs, esc := cs.CoreV1().Services(ns), cs.DiscoveryV1().EndpointSlices(ns)
	got, err := kube.CreateOwn(ctx, "create service "+ns+"/"+name, svc,
		func(ctx context.Context) (*corev1.Service, error) {
			return svcs.Create(ctx, svc, metav1.CreateOptions{})
		},
		func(ctx context.Context) (*corev1.Service, error) { return svcs.Get(ctx, name, metav1.GetOptions{}) })
	if err != nil {
		return ServiceRef{}, false, fmt.Errorf("%w%s", err, kube.CreateHint(err))
	}
	ref = ServiceRef{Name: name, ClusterIP: got.Spec.ClusterIP}
	if got.UID != "" {
		// The slice goes with its service, whoever deletes it.
		slice.OwnerReferences = OwnedBy(name, got.UID)
	}
	_, err = kube.CreateOwn(ctx, "create endpointslice "+ns+"/"+name, slice,
		func(ctx context.Context) (*discoveryv1.EndpointSlice, error) {
			return esc.Create(ctx, slice, metav1.CreateOptions{})
		},
		func(ctx context.Context) (*discoveryv1.EndpointSlice, error) {
			return esc.Get(ctx, name, metav1.GetOptions{})
		})
	if err != nil {
		return ref, true, fmt.Errorf("%w%s", err, kube.CreateHint(err))
	}
	return ref, true, nil
}

// DeleteServices deletes the services and EndpointSlices of namespace ns
// that labelSelector (not empty) matches: the slices with one
// DeleteCollection (one by one if the API server refuses it), the services
// one by one (older API servers have no DeleteCollection for services),
// workers (at least 1) at a time, each call bounded and retried as
// kube.RetryPolicy says. It then waits, at most timeout, until none of either is left, and returns
// how many services it deleted. It goes on after errors and returns the
// first with their count.
func DeleteServices(ctx context.Context, cs kubernetes.Interface, ns, labelSelector string, workers int, timeout time.Duration) (removed int, err error) {
	what := "delete services " + ns + "/" + labelSelector
	if labelSelector == "" {
		return 0, fmt.Errorf("delete services in %s: empty label selector refused (it would delete every service of the namespace)", ns)
	}
	var errs []error
	esc := cs.DiscoveryV1().EndpointSlices(ns)
	err = kube.Call(ctx, "delete endpointslices "+labelSelector+" in "+ns, func(ctx context.Context) error {
		return esc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: labelSelector})
	})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsForbidden(err) {
		kube.Logger(ctx).Debug("deletecollection of endpointslices refused, deleting one by one", "namespace", ns, "err", err)
		err = deleteEach(ctx, "endpointslice", ns, labelSelector, workers, func(ctx context.Context, opts metav1.ListOptions) ([]string, string, error) {
			l, err := esc.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return names(l.Items, func(o *discoveryv1.EndpointSlice) string { return o.Name }), l.Continue, nil
		}, func(ctx context.Context, name string) error { return esc.Delete(ctx, name, metav1.DeleteOptions{}) }, nil)
	}
	errs = append(errs, err)

	svcs := cs.CoreV1().Services(ns)
	var mu sync.Mutex
	err = deleteEach(ctx, "service", ns, labelSelector, workers, func(ctx context.Context, opts metav1.ListOptions) ([]string, string, error) {
		l, err := svcs.List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return names(l.Items, func(o *corev1.Service) string { return o.Name }), l.Continue, nil
	}, func(ctx context.Context, name string) error { return svcs.Delete(ctx, name, metav1.DeleteOptions{}) }, func() {
		mu.Lock()
		removed++
		mu.Unlock()
	})
	errs = append(errs, err)

	var left string
	werr := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		// One item per list is enough to know, with the count of the
		// rest, without listing thousands every poll.
		opts := metav1.ListOptions{LabelSelector: labelSelector, Limit: 1}
		var sl *corev1.ServiceList
		var el *discoveryv1.EndpointSliceList
		transient, err := kube.Once(ctx, "list services and endpointslices "+labelSelector+" in "+ns, func(ctx context.Context) (err error) {
			if sl, err = svcs.List(ctx, opts); err != nil {
				return err
			}
			el, err = esc.List(ctx, opts)
			return err
		})
		if transient {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		left = listed(len(sl.Items), sl.Continue, sl.RemainingItemCount) + " services, " +
			listed(len(el.Items), el.Continue, el.RemainingItemCount) + " endpointslices"
		if len(sl.Items) > 0 {
			left += " (" + sl.Items[0].Name + ", …)"
		}
		empty := func(n int, cont string) bool { return n == 0 && cont == "" }
		return empty(len(sl.Items), sl.Continue) && empty(len(el.Items), el.Continue), nil
	})
	switch {
	case werr == nil:
	case wait.Interrupted(werr) && ctx.Err() == nil:
		errs = append(errs, fmt.Errorf("%s: still present after %v: %s", what, timeout, left))
	case wait.Interrupted(werr):
		errs = append(errs, fmt.Errorf("%s: wait until gone: %w", what, ctx.Err()))
	default:
		errs = append(errs, werr)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, err
	}
	kube.Logger(ctx).Debug("services deleted", "namespace", ns, "selector", labelSelector, "services", removed)
	return removed, nil
}

// deleteEach lists the objects of kind in ns that sel matches (page by
// page) and deletes them, workers at a time; not found is no error, done
// (if not nil) is called per deletion. It returns the first error, with
// the number of failures.
func deleteEach(ctx context.Context, kind, ns, sel string, workers int,
	list func(context.Context, metav1.ListOptions) (names []string, cont string, err error),
	del func(context.Context, string) error, done func()) error {
	var all []string
	opts := metav1.ListOptions{LabelSelector: sel, Limit: 1000}
	for {
		var page []string
		var cont string
		err := kube.Call(ctx, "list "+kind+"s "+sel+" in "+ns, func(ctx context.Context) (err error) {
			page, cont, err = list(ctx, opts)
			return err
		})
		if err != nil {
			return err
		}
		all = append(all, page...)
		if cont == "" {
			break
		}
		opts.Continue = cont
	}
	failed, first := forEach(ctx, workers, len(all), false, func(ctx context.Context, i int) error {
		err := kube.Call(ctx, "delete "+kind+" "+ns+"/"+all[i], func(ctx context.Context) error { return del(ctx, all[i]) })
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("%w%s", err, kube.CreateHint(err))
		}
		if done != nil {
			done()
		}
		return nil
	})
	if first != nil {
		return fmt.Errorf("%d of %d %ss not deleted, the first: %w", failed, len(all), kind, first)
	}
	return nil
}

// listed says how many objects a list holds: its n items, and if it was
// cut short (cont), the count of the rest when the API server knows it
// (not for lists filtered by label).
func listed(n int, cont string, remaining *int64) string {
	switch {
	case cont == "":
		return strconv.Itoa(n)
	case remaining != nil:
		return strconv.Itoa(n + int(*remaining))
	default:
		return "more than " + strconv.Itoa(n)
	}
}

// names returns the names of items.
func names[T any](items []T, name func(*T) string) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = name(&items[i])
	}
	return out
}

// forEach calls fn(ctx, i) for every i in [0, n), on workers goroutines (at
// least 1, at most n). With stop, nothing more is started after the first
// error; the calls under way finish (they are not cancelled, so that what
// they created is known). It returns how many calls failed and the first
// error (ctx's error if ctx ended before all were started).
func forEach(ctx context.Context, workers, n int, stop bool, fn func(context.Context, int) error) (failed int, first error) {
	if n <= 0 {
		return 0, nil
	}
	workers = min(max(workers, 1), n)
	var mu sync.Mutex
	var once sync.Once
	stopped := make(chan struct{})
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				err := fn(ctx, i)
				if err == nil {
					continue
				}
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
				if stop {
					once.Do(func() { close(stopped) })
				}
			}
		})
	}
	interrupted := false
feed:
	for i := range n {
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		select {
		case jobs <- i:
		case <-stopped:
			break feed
		case <-ctx.Done():
			interrupted = true
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if first == nil && interrupted {
		first = ctx.Err()
	}
	return failed, first
}
