package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/cnibench/cnibench/internal/kube/preflight"
)

// The CNIs' own policy resources that the egress-filter scenario's
// cilium-policy and calico-networkset mechanisms create, all
// cluster-scoped.
var (
	// CiliumClusterwidePolicies are Cilium's CiliumClusterwideNetworkPolicies.
	CiliumClusterwidePolicies = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumclusterwidenetworkpolicies"}
	// CalicoGlobalNetworkSets are Calico's GlobalNetworkSets (its CRD
	// API group, as installed without the Calico API server).
	CalicoGlobalNetworkSets = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworksets"}
	// CalicoGlobalNetworkPolicies are Calico's GlobalNetworkPolicies.
	CalicoGlobalNetworkPolicies = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworkpolicies"}
)

// clusterPolicyKinds maps the kinds the builders of this file make to
// their resources.
var clusterPolicyKinds = map[schema.GroupVersionKind]schema.GroupVersionResource{
	CiliumClusterwidePolicies.GroupVersion().WithKind("CiliumClusterwideNetworkPolicy"): CiliumClusterwidePolicies,
	CalicoGlobalNetworkSets.GroupVersion().WithKind("GlobalNetworkSet"):                 CalicoGlobalNetworkSets,
	CalicoGlobalNetworkPolicies.GroupVersion().WithKind("GlobalNetworkPolicy"):          CalicoGlobalNetworkPolicies,
}

// ClusterPolicyResources are the cluster-scoped resources of the CNIs'
// policy objects that cnibench may create, in the order Clean removes them
// (policies before the sets they refer to).
var ClusterPolicyResources = []schema.GroupVersionResource{CiliumClusterwidePolicies, CalicoGlobalNetworkPolicies, CalicoGlobalNetworkSets}

// NamespaceKey labels a cluster-scoped object with the namespace of the run
// that created it, so that Clean of that namespace finds it.
const NamespaceKey = "cnibench.io/namespace"

// DenySetKey labels the GlobalNetworkSets of CalicoDenyObjects with the
// name of their deny set, which the GlobalNetworkPolicy selects.
const DenySetKey = "cnibench.io/deny-set"

// CalicoPolicyOrder is the order of CalicoDenyObjects' GlobalNetworkPolicy:
// low, so that its Deny comes before the allows of the cluster's own
// policies in the same tier.
const CalicoPolicyOrder = 10

// ClusterObjectLabels returns the labels of a cluster-scoped object of run
// runID whose pods live in namespace ns: the run's labels and NamespaceKey.
func ClusterObjectLabels(ns, runID string) map[string]string {
	l := runLabels(runID)
	l[NamespaceKey] = ns
	return l
}

// NotServedError says that the cluster does not serve a resource, and why.
type NotServedError struct {
	// Resource is the resource looked for.
	Resource schema.GroupVersionResource
	// Reason says what discovery found instead.
	Reason string
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("%s %s not served by this cluster (%s)", e.Resource.GroupVersion(), e.Resource.Resource, e.Reason)
}

// IsNotServed reports whether err is or wraps a *NotServedError.
func IsNotServed(err error) bool {
	var ns *NotServedError
	return errors.As(err, &ns)
}

// Served checks, through the discovery API, that the cluster serves every
// resource of gvrs. It returns a *NotServedError for the first one it does
// not serve (its group version is unknown, or lacks the resource), or the
// discovery error. Each discovery call is bounded and retried as
// RetryPolicy says.
func Served(ctx context.Context, disc discovery.DiscoveryInterface, gvrs ...schema.GroupVersionResource) error {
	if disc == nil {
		return errors.New("discover resources: no discovery client (pass the clientset's Discovery())")
	}
	dc := discovery.ToDiscoveryInterfaceWithContext(disc)
	lists := map[string]*metav1.APIResourceList{}
	for _, gvr := range gvrs {
		gv := gvr.GroupVersion().String()
		list, ok := lists[gv]
		if !ok {
			var l *metav1.APIResourceList
			err := Call(ctx, "discover the resources of "+gv, func(ctx context.Context) (err error) {
				l, err = dc.ServerResourcesForGroupVersionWithContext(ctx, gv)
				return err
			})
			switch {
			case apierrors.IsNotFound(err):
				return &NotServedError{gvr, "the API server has no group version " + gv + ": the CNI or its CRDs are not installed"}
			case err != nil:
				return err
			}
			lists[gv], list = l, l
		}
		if list == nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
			return &NotServedError{gvr, gv + " is served without " + gvr.Resource + ": the CRD is not installed"}
		}
	}
	return nil
}

// denyChunks checks the builders' common arguments and returns the
// normalised deny CIDRs in chunks of at most maxPerObject.
func denyChunks(what, name string, selector map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) ([][]netip.Prefix, error) {
	if maxPerObject < 1 {
		return nil, fmt.Errorf("%s: %d deny CIDRs per object: want at least 1 (default %d)", what, maxPerObject, DefaultPolicyChunk)
	}
	if len(selector) == 0 {
		return nil, fmt.Errorf("%s: no pod labels to select the client by: a cluster-wide policy without them would apply to every endpoint (pass the client pod's labels)", what)
	}
	if err := ValidLabels(selector); err != nil {
		return nil, fmt.Errorf("%s: pod selector: %w", what, err)
	}
	if err := ValidLabels(labels); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	deny, err := NormalizeDeny(deny)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var chunks [][]netip.Prefix
	for c := range slices.Chunk(deny, maxPerObject) {
		chunks = append(chunks, c)
	}
	if err := ValidObjectNames(name, len(chunks)); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return chunks, nil
}

// calicoSelector renders labels as a Calico selector: k == 'v' && …, keys
// sorted. Label keys and values cannot hold quotes, so no escaping is
// needed.
func calicoSelector(labels map[string]string) string {
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		terms = append(terms, k+" == '"+labels[k]+"'")
	}
	return strings.Join(terms, " && ")
}

// objectMeta is the metadata of a cluster-scoped unstructured object.
func objectMeta(name string, labels map[string]string) map[string]any {
	m := map[string]any{"name": name}
	if len(labels) > 0 {
		m["labels"] = stringMap(labels)
	}
	return m
}

// stringMap converts to the type unstructured content holds (its deep
// copy refuses map[string]string; prefixesAny makes its []any of strings).
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ResourceFor returns the resource of obj, one of the kinds
// CiliumDenyPolicies and CalicoDenyObjects make.
func ResourceFor(obj *unstructured.Unstructured) (schema.GroupVersionResource, error) {
	if obj == nil {
		return schema.GroupVersionResource{}, errors.New("resource of a nil object")
	}
	gvk := obj.GroupVersionKind()
	gvr, ok := clusterPolicyKinds[gvk]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("object %s: kind %s is not one of the cluster policy kinds cnibench creates (add it to kube.clusterPolicyKinds)", obj.GetName(), gvk)
	}
	return gvr, nil
}

// ClusterPreflightObjects are objs' dry-run candidates for preflight.Check: the
// first object of each resource, created through dyn (an admission
// webhook or policy that refuses a kind refuses its first object as it
// would the rest, and the rest are the same shape). why says what they
// are for. Objects of a kind ResourceFor does not know are left out: the
// create reports them.
func ClusterPreflightObjects(dyn dynamic.Interface, objs []*unstructured.Unstructured, why string) []preflight.Object {
	if dyn == nil {
		return nil
	}
	var out []preflight.Object
	seen := map[schema.GroupVersionResource]bool{}
	for _, o := range objs {
		gvr, err := ResourceFor(o)
		if err != nil || seen[gvr] {
			continue
		}
		seen[gvr] = true
		out = append(out, preflight.Object{Obj: o, Kind: o.GetKind(), Why: why, Create: func(ctx context.Context, opts metav1.CreateOptions) error {
			_, err := dyn.Resource(gvr).Create(ctx, o, opts)
			return err
		}})
	}
	return out
}

// CreateHint says what to do about a failed create or delete (for callers
// that make their own creates, too).
func CreateHint(err error) string {
	switch {
	case apierrors.IsRequestEntityTooLargeError(err):
		return " (too large for the API server: lower the deny CIDRs per object)"
	case apierrors.IsAlreadyExists(err):
		return " (left by an earlier run: cnibench k8s clean removes it)"
	case apierrors.IsForbidden(err):
		return " (apply the RBAC of cnibench k8s rbac)"
	}
	return ""
}

// DeleteClusterObjects deletes the cluster-scoped objects of resource gvr
// that selector matches (DeleteCollection, or one by one when the API
// server refuses it), then waits, at most timeout, until none is left. It
// returns what it deleted, as "<kind> <name>". A resource the cluster does
// not serve has nothing to delete. An empty selector is refused.
func DeleteClusterObjects(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, selector string, timeout time.Duration) (removed []string, err error) {
	removed, err = deleteClusterObjects(ctx, dyn, gvr, selector)
	if err != nil || len(removed) == 0 {
		return removed, err
	}
	left, err := waitClusterGone(ctx, dyn, gvr, selector, timeout)
	if err != nil {
		return removed, err
	}
	if left != "" {
		return removed, fmt.Errorf("delete %s %s: still present after %v: %s", gvr.Resource, selector, timeout, left)
	}
	return removed, nil
}

// deleteClusterObjects is DeleteClusterObjects without the wait.
func deleteClusterObjects(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, selector string) (removed []string, err error) {
	if dyn == nil {
		return nil, fmt.Errorf("delete %s: no dynamic client (kube.NewDynamicClient)", gvr.Resource)
	}
	if selector == "" {
		return nil, fmt.Errorf("delete %s: empty label selector refused (it would delete every object of the cluster)", gvr.Resource)
	}
	items, err := listClusterObjects(ctx, dyn, gvr, selector)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	rc := dyn.Resource(gvr)
	err = Call(ctx, "delete "+gvr.Resource+" "+selector, func(ctx context.Context) error {
		return rc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
	})
	switch {
	case err == nil:
		for _, it := range items {
			removed = append(removed, kindName(gvr, it))
		}
		Logger(ctx).Debug("deleted collection", "resource", gvr.Resource, "selector", selector, "objects", len(items))
		return removed, nil
	case apierrors.IsMethodNotSupported(err) || apierrors.IsForbidden(err):
		Logger(ctx).Debug("deletecollection refused, deleting one by one", "resource", gvr.Resource, "err", err)
	default:
		return nil, err
	}
	var errs []error
	for _, it := range items {
		err := Call(ctx, "delete "+gvr.Resource+" "+it.GetName(), func(ctx context.Context) error {
			return rc.Delete(ctx, it.GetName(), metav1.DeleteOptions{})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%w%s", err, CreateHint(err)))
			continue
		}
		removed = append(removed, kindName(gvr, it))
	}
	return removed, errors.Join(errs...)
}

// listClusterObjects lists the objects of gvr that selector matches; a
// resource the cluster does not serve has none.
func listClusterObjects(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, selector string) ([]unstructured.Unstructured, error) {
	var l *unstructured.UnstructuredList
	err := Call(ctx, "list "+gvr.Resource+" "+selector, func(ctx context.Context) (err error) {
		l, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return l.Items, nil
}

// waitClusterGone waits, at most timeout, until no object of gvr matches
// selector. On timeout it returns what is left; an error only for API
// errors other than passing ones (Retryable: the look is made again) or
// ctx's end.
func waitClusterGone(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, selector string, timeout time.Duration) (left string, err error) {
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var items []unstructured.Unstructured
		transient, err := Once(ctx, "list "+gvr.Resource+" "+selector, func(ctx context.Context) error {
			l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil {
				items = l.Items
			}
			return err
		})
		if transient {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var what []string
		for _, it := range items {
			what = append(what, kindName(gvr, it))
		}
		left = strings.Join(what, ", ")
		return len(items) == 0, nil
	})
	switch {
	case err == nil:
		return "", nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return left, nil
	case wait.Interrupted(err):
		return left, fmt.Errorf("wait for %s %s to go: %w", gvr.Resource, selector, ctx.Err())
	default:
		return left, err
	}
}

// kindName names a cluster-scoped object in messages: "<kind> <name>".
func kindName(gvr schema.GroupVersionResource, o unstructured.Unstructured) string {
	k := strings.ToLower(o.GetKind())
	if k == "" {
		k = gvr.Resource
	}
	return k + " " + o.GetName()
}
