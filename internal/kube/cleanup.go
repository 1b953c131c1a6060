package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// objRef names a namespaced object.
type objRef struct{ ns, name string }

// kinds are the namespaced kinds of objects cnibench creates, with how to
// list (by label selector) and delete them, in the order they are deleted:
// network policies first, so that a CNI can drop a run's policy (a large
// one keeps an agent busy: Cilium 1.15 splits an ipBlock's excepts into
// CIDR prefixes) before it must tear down the pods the policy selects;
// then the pods, with a 1 s grace period.
func kinds(cs kubernetes.Interface) []struct {
	kind string
	list func(ctx context.Context, ns, sel string) ([]objRef, error)
	del  func(ctx context.Context, ns, name string) error
} {
	opts := func(sel string) metav1.ListOptions { return metav1.ListOptions{LabelSelector: sel} }
	grace := metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))}
	return []struct {
		kind string
		list func(ctx context.Context, ns, sel string) ([]objRef, error)
		del  func(ctx context.Context, ns, name string) error
	}{
		{"networkpolicy", func(ctx context.Context, ns, sel string) ([]objRef, error) {
			l, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, opts(sel))
			if err != nil {
				return nil, err
			}
			return refs(l.Items, func(o *networkingv1.NetworkPolicy) metav1.Object { return o }), nil
		}, func(ctx context.Context, ns, name string) error {
			return cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}},
		{"pod", func(ctx context.Context, ns, sel string) ([]objRef, error) {
			l, err := cs.CoreV1().Pods(ns).List(ctx, opts(sel))
			if err != nil {
				return nil, err
			}
			return refs(l.Items, func(o *corev1.Pod) metav1.Object { return o }), nil
		}, func(ctx context.Context, ns, name string) error {
			return cs.CoreV1().Pods(ns).Delete(ctx, name, grace)
		}},
		{"service", func(ctx context.Context, ns, sel string) ([]objRef, error) {
			l, err := cs.CoreV1().Services(ns).List(ctx, opts(sel))
			if err != nil {
				return nil, err
			}
			return refs(l.Items, func(o *corev1.Service) metav1.Object { return o }), nil
		}, func(ctx context.Context, ns, name string) error {
			return cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}},
		{"secret", func(ctx context.Context, ns, sel string) ([]objRef, error) {
			l, err := cs.CoreV1().Secrets(ns).List(ctx, opts(sel))
			if err != nil {
				return nil, err
			}
			return refs(l.Items, func(o *corev1.Secret) metav1.Object { return o }), nil
		}, func(ctx context.Context, ns, name string) error {
			return cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}},
		{"endpointslice", func(ctx context.Context, ns, sel string) ([]objRef, error) {
			l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, opts(sel))
			if err != nil {
				return nil, err
			}
			return refs(l.Items, func(o *discoveryv1.EndpointSlice) metav1.Object { return o }), nil
		}, func(ctx context.Context, ns, name string) error {
			return cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}},
	}
}

// refs returns the namespaces and names of items.
func refs[T any](items []T, meta func(*T) metav1.Object) []objRef {
	out := make([]objRef, 0, len(items))
	for i := range items {
		m := meta(&items[i])
		out = append(out, objRef{m.GetNamespace(), m.GetName()})
	}
	return out
}

// deleteLabelled deletes the objects of ns (all namespaces if "") that sel
// matches, except those in the namespaces of skip, and returns them as
// "kind ns/name". It goes on after errors, and returns them all.
func deleteLabelled(ctx context.Context, cs kubernetes.Interface, ns, sel string, skip map[string]bool) (removed []string, err error) {
	var errs []error
	for _, k := range kinds(cs) {
		var objs []objRef
		err := Call(ctx, "list "+k.kind+" objects in "+nsName(ns), func(ctx context.Context) (err error) {
			objs, err = k.list(ctx, ns, sel)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range objs {
			if skip[o.ns] {
				continue
			}
			err := Call(ctx, "delete "+k.kind+" "+o.ns+"/"+o.name, func(ctx context.Context) error { return k.del(ctx, o.ns, o.name) })
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			Logger(ctx).Debug("deleted", "kind", k.kind, "object", o.ns+"/"+o.name)
			removed = append(removed, k.kind+" "+o.ns+"/"+o.name)
		}
	}
	return removed, errors.Join(errs...)
}

// nsName names namespace ns in messages.
func nsName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// DeleteRun deletes the pods (with a 1 s grace period), services, secrets,
// endpoint slices and network policies of run runID in namespace ns, then, if
// deleteNamespace, the namespace itself, which must carry the run's labels
// (as EnsureNamespace made it). It then waits, at most timeout, until the
// pods and the namespace are gone. It goes on after errors, and returns
// them all. Every API call is bounded and retried as RetryPolicy says.
func DeleteRun(ctx context.Context, cs kubernetes.Interface, ns, runID string, deleteNamespace bool, timeout time.Duration) error {
	sel := runSelector(runID)
	_, err := deleteLabelled(ctx, cs, ns, sel, nil)
	errs := []error{err}
	nsGone := !deleteNamespace
	if deleteNamespace {
		var n *corev1.Namespace
		err := Call(ctx, "get namespace "+ns, func(ctx context.Context) (err error) {
			n, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err
		})
		switch {
		case apierrors.IsNotFound(err):
			nsGone = true
		case err != nil:
			errs = append(errs, err)
			nsGone = true // do not wait for it
		case n.Labels[ManagedByKey] != ManagedBy || n.Labels[RunKey] != runID:
			errs = append(errs, fmt.Errorf("namespace %s not deleted: it is not labelled %s", ns, sel))
			nsGone = true
		default:
			if err := deleteNamespaceObj(ctx, cs, ns); err != nil {
				errs = append(errs, err)
				nsGone = true
			} else {
				Logger(ctx).Info("namespace deleted", "namespace", ns)
			}
		}
	}
	left, err := waitGone(ctx, cs, ns, sel, nsGone, nil, timeout)
	if err != nil {
		errs = append(errs, fmt.Errorf("clean-up of run %s: %w", runID, err))
	} else if left != "" {
		errs = append(errs, fmt.Errorf("clean-up of run %s: still present after %v: %s (a pod goes once its CNI has released it: see the CNI agent's log; 'cnibench k8s clean --namespace %s' removes what is left)", runID, timeout, left, ns))
	}
	return errors.Join(errs...)
}

// deleteNamespaceObj deletes namespace ns (not found is no error).
func deleteNamespaceObj(ctx context.Context, cs kubernetes.Interface, ns string) error {
	err := Call(ctx, "delete namespace "+ns, func(ctx context.Context) error {
		return cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// waitGone waits, at most timeout, until no pod of ns (all namespaces if
// "") matches sel, namespace ns is gone unless nsGone, and so are the
// namespaces of more. On timeout it returns what is left ("" if nothing);
// an error only for API errors other than passing ones (Retryable: the
// look is made again) or ctx's end.
func waitGone(ctx context.Context, cs kubernetes.Interface, ns, sel string, nsGone bool, more []string, timeout time.Duration) (left string, err error) {
	waitNS := slices.Clone(more)
	if !nsGone {
		waitNS = append(waitNS, ns)
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var what []string
		var pods *corev1.PodList
		transient, err := Once(ctx, "list pods in "+nsName(ns), func(ctx context.Context) (err error) {
			pods, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			return err
		})
		if transient {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			what = append(what, "pod "+p.Namespace+"/"+p.Name)
		}
		for _, n := range waitNS {
			transient, err := Once(ctx, "get namespace "+n, func(ctx context.Context) error {
				_, err := cs.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
				return err
			})
			switch {
			case transient:
				return false, nil
			case apierrors.IsNotFound(err):
			case err != nil:
				return false, err
			default:
				what = append(what, "namespace "+n)
			}
		}
		left = strings.Join(what, ", ")
		return left == "", nil
	})
	switch {
	case err == nil:
		return "", nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return left, nil
	case wait.Interrupted(err):
		return left, ctx.Err()
	default:
		return left, err
	}
}

// CleanOption adds to what Clean removes.
type CleanOption func(*cleanConfig)

type cleanConfig struct {
	dyn dynamic.Interface
}

// CleanPolicyObjects makes Clean also remove, through dyn, the CNIs'
// cluster-scoped policy objects (ClusterPolicyResources: Cilium's
// CiliumClusterwideNetworkPolicies, Calico's GlobalNetworkPolicies and
// GlobalNetworkSets) labelled ManagedByKey=ManagedBy, and, when Clean is
// given a namespace, NamespaceKey=<namespace> (ClusterObjectLabels).
// Resources the cluster does not serve are skipped silently.
func CleanPolicyObjects(dyn dynamic.Interface) CleanOption {
	return func(c *cleanConfig) { c.dyn = dyn }
}

// Clean removes the leftovers of crashed runs: the pods, services, secrets,
// endpoint slices and network policies labelled ManagedByKey=ManagedBy in
// namespace (all namespaces if ""), the namespaces so labelled (only
// namespace itself, if given), and with CleanPolicyObjects the CNIs'
// cluster-scoped policy objects of those runs. It waits, at most timeout
// in all, until the pods, namespaces and policy objects are gone, and
// returns what it removed, as "pod ns/name", "namespace name",
// "ciliumclusterwidenetworkpolicy name"….
func Clean(ctx context.Context, cs kubernetes.Interface, namespace string, timeout time.Duration, opts ...CleanOption) (removed []string, err error) {
	var cfg cleanConfig
	for _, o := range opts {
		o(&cfg)
	}
	deadline := time.Now().Add(timeout)
	sel := ManagedByKey + "=" + ManagedBy
	var nsList []string
	var errs []error
	var l *corev1.NamespaceList
	err = Call(ctx, "list namespaces", func(ctx context.Context) (err error) {
		l, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, n := range l.Items {
			if namespace == "" || n.Name == namespace {
				nsList = append(nsList, n.Name)
			}
		}
	}
	skip := map[string]bool{}
	for _, n := range nsList {
		skip[n] = true
	}
	// The objects of the namespaces to delete go with them.
	removed, err = deleteLabelled(ctx, cs, namespace, sel, skip)
	errs = append(errs, err)
	var deleted []string
	for _, n := range nsList {
		if err := deleteNamespaceObj(ctx, cs, n); err != nil {
			errs = append(errs, err)
			continue
		}
		Logger(ctx).Info("namespace deleted", "namespace", n)
		removed = append(removed, "namespace "+n)
		deleted = append(deleted, n)
	}
	var policies []schema.GroupVersionResource
	policySel := sel
	if namespace != "" {
		policySel += "," + NamespaceKey + "=" + namespace
	}
	if cfg.dyn != nil {
		for _, gvr := range ClusterPolicyResources {
			err := Served(ctx, cs.Discovery(), gvr)
			switch {
			case IsNotServed(err):
				Logger(ctx).Debug("not served, skipped", "resource", gvr.Resource, "reason", err)
				continue
			case err != nil:
				errs = append(errs, fmt.Errorf("clean %s: %w", gvr.Resource, err))
				continue
			}
			r, err := deleteClusterObjects(ctx, cfg.dyn, gvr, policySel)
			removed = append(removed, r...)
			errs = append(errs, err)
			if len(r) > 0 {
				policies = append(policies, gvr)
			}
		}
	}
	left, err := waitGone(ctx, cs, namespace, sel, true, deleted, remaining(deadline))
	if err != nil {
		errs = append(errs, fmt.Errorf("clean: %w", err))
	} else if left != "" {
		errs = append(errs, fmt.Errorf("clean: still present after %v: %s", timeout, left))
	}
	for _, gvr := range policies {
		left, err := waitClusterGone(ctx, cfg.dyn, gvr, policySel, remaining(deadline))
		if err != nil {
			errs = append(errs, fmt.Errorf("clean: %w", err))
		} else if left != "" {
			errs = append(errs, fmt.Errorf("clean: still present after %v: %s", timeout, left))
		}
	}
	return removed, errors.Join(errs...)
}

// remaining is the time left until deadline, at least one poll interval so
// that a wait looks at least once.
func remaining(deadline time.Time) time.Duration {
	return max(time.Until(deadline), pollInterval)
}
