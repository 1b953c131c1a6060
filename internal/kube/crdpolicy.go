package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
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

// CiliumDenyPolicies returns CiliumClusterwideNetworkPolicies
// (cilium.io/v2) that deny the endpoints whose labels include
// endpointLabels (the client pod's labels; not empty, since an empty
// selector would select every endpoint of the cluster) egress to the deny
// CIDRs, maxPerObject of them per object. Each object also allows all
// egress (toEntities [all]), so that a deny-only policy does not put the
// endpoint into default deny; Cilium unions the denies of all the objects.
// deny is normalised by NormalizeDeny (IPv4 only, a CIDR inside
// another dropped); no deny CIDR makes no object. The objects are named
// name-0, name-1…, labelled labels.
func CiliumDenyPolicies(name string, endpointLabels map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) ([]*unstructured.Unstructured, error) {
	chunks, err := denyChunks("cilium deny policies "+name, name, endpointLabels, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(chunks))
	for i, c := range chunks {
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": CiliumClusterwidePolicies.GroupVersion().String(),
			"kind":       "CiliumClusterwideNetworkPolicy",
			"metadata":   objectMeta(name+"-"+strconv.Itoa(i), labels),
			"spec": map[string]any{
				"description":      fmt.Sprintf("cnibench egress deny %s, part %d of %d", name, i+1, len(chunks)),
				"endpointSelector": map[string]any{"matchLabels": stringMap(endpointLabels)},
				"egress":           []any{map[string]any{"toEntities": []any{"all"}}},
				"egressDeny":       []any{map[string]any{"toCIDR": anyStrings(PrefixStrings(c))}},
			},
		}}
		out = append(out, o)
	}
	return out, nil
}

// CalicoDenyObjects returns Calico GlobalNetworkSets (crd.projectcalico.org/v1)
// holding the deny CIDRs, maxPerObject per set, named name-0, name-1… and
// labelled labels and DenySetKey=name, followed by one GlobalNetworkPolicy
// that denies the endpoints whose labels include podLabels (the client
// pod's; not empty) egress to the sets (destination selector DenySetKey ==
// name) and allows the rest, at order CalicoPolicyOrder. The policy is
// named "default."+name, the name Calico itself stores for a policy of its
// default tier. deny is normalised by NormalizeDeny; no deny CIDR
// makes no object. name must also be a valid label value.
func CalicoDenyObjects(name string, podLabels map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) ([]*unstructured.Unstructured, error) {
	what := "calico deny objects " + name
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return nil, fmt.Errorf("%s: name is the %s label's value and not valid as one: %s", what, DenySetKey, errs[0])
	}
	chunks, err := denyChunks(what, name, podLabels, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	if len(chunks) == 0 {
		return nil, nil
	}
	setLabels := maps.Clone(labels)
	if setLabels == nil {
		setLabels = map[string]string{}
	}
	setLabels[DenySetKey] = name
	out := make([]*unstructured.Unstructured, 0, len(chunks)+1)
	for i, c := range chunks {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": CalicoGlobalNetworkSets.GroupVersion().String(),
			"kind":       "GlobalNetworkSet",
			"metadata":   objectMeta(name+"-"+strconv.Itoa(i), setLabels),
			"spec":       map[string]any{"nets": anyStrings(PrefixStrings(c))},
		}})
	}
	out = append(out, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CalicoGlobalNetworkPolicies.GroupVersion().String(),
		"kind":       "GlobalNetworkPolicy",
		"metadata":   objectMeta("default."+name, labels),
		"spec": map[string]any{
			"order":    int64(CalicoPolicyOrder),
			"selector": calicoSelector(podLabels),
			"types":    []any{"Egress"},
			"egress": []any{
				map[string]any{"action": "Deny", "destination": map[string]any{"selector": calicoSelector(map[string]string{DenySetKey: name})}},
				map[string]any{"action": "Allow"},
			},
		},
	}})
	return out, nil
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

// stringMap and anyStrings convert to the types unstructured content holds
// (its deep copy refuses map[string]string and []string).
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func anyStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
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

// CreateClusterObjects creates the cluster-scoped objects objs, in order,
// through dyn, each call bounded and retried as RetryPolicy says (a retry
// that meets the object its earlier attempt made takes it), and returns how many it
// created and the bytes of JSON sent for them (ObjectBytes). It stops at
// the first error: what was created is then to be deleted by label
// (DeleteClusterObjects).
func CreateClusterObjects(ctx context.Context, dyn dynamic.Interface, objs []*unstructured.Unstructured) (created, bytes int, err error) {
	if dyn == nil {
		return 0, 0, errors.New("create cluster objects: no dynamic client (kube.NewDynamicClient)")
	}
	for i, o := range objs {
		gvr, err := ResourceFor(o)
		if err != nil {
			return created, bytes, fmt.Errorf("create cluster objects: %w", err)
		}
		n := ObjectBytes(o.Object)
		rc := dyn.Resource(gvr)
		_, err = CreateOwn(ctx, fmt.Sprintf("create %s %s (%d of %d, %d bytes)", gvr.Resource, o.GetName(), i+1, len(objs), n), o,
			func(ctx context.Context) (*unstructured.Unstructured, error) {
				return rc.Create(ctx, o, metav1.CreateOptions{})
			},
			func(ctx context.Context) (*unstructured.Unstructured, error) {
				return rc.Get(ctx, o.GetName(), metav1.GetOptions{})
			})
		if err != nil {
			return created, bytes, fmt.Errorf("%w%s", err, CreateHint(err))
		}
		created++
		bytes += n
		Logger(ctx).Debug("created", "resource", gvr.Resource, "name", o.GetName(), "bytes", n)
	}
	return created, bytes, nil
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
