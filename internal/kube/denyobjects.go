package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
)

// DenyObjects are a deny set's cluster-scoped objects (Cilium's or
// Calico's), built one at a time when asked for (Object): only the
// normalised CIDRs are held, so that a million CIDRs' objects (their
// strings, about 50 bytes a CIDR as unstructured content) are never all
// in memory at once; CreateDenyObjects sends them so.
type DenyObjects struct {
	n     int
	build func(i int) *unstructured.Unstructured
}

// Len is the number of objects.
func (d *DenyObjects) Len() int {
	if d == nil {
		return 0
	}
	return d.n
}

// Object builds object i (0 ≤ i < Len), a fresh copy each call.
func (d *DenyObjects) Object(i int) *unstructured.Unstructured { return d.build(i) }

// All builds every object (for the few callers that hold them all).
func (d *DenyObjects) All() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, d.Len())
	for i := range d.Len() {
		out = append(out, d.build(i))
	}
	return out
}

// Kinds returns the first object of each kind (what a dry run of the set
// checks: ClusterPreflightObjects).
func (d *DenyObjects) Kinds() []*unstructured.Unstructured {
	switch d.Len() {
	case 0:
		return nil
	case 1:
		return []*unstructured.Unstructured{d.build(0)}
	}
	first, last := d.build(0), d.build(d.n-1)
	if first.GetKind() == last.GetKind() {
		return []*unstructured.Unstructured{first}
	}
	return []*unstructured.Unstructured{first, last}
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
// name-0, name-1…, labelled labels. CiliumDenySet builds them lazily.
func CiliumDenyPolicies(name string, endpointLabels map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) ([]*unstructured.Unstructured, error) {
	d, err := CiliumDenySet(name, endpointLabels, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	return d.All(), nil
}

// CiliumDenySet is CiliumDenyPolicies, built one object at a time.
func CiliumDenySet(name string, endpointLabels map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) (*DenyObjects, error) {
	chunks, err := denyChunks("cilium deny policies "+name, name, endpointLabels, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	labels, endpointLabels = maps.Clone(labels), maps.Clone(endpointLabels)
	return &DenyObjects{n: len(chunks), build: func(i int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": CiliumClusterwidePolicies.GroupVersion().String(),
			"kind":       "CiliumClusterwideNetworkPolicy",
			"metadata":   objectMeta(name+"-"+strconv.Itoa(i), labels),
			"spec": map[string]any{
				"description":      fmt.Sprintf("cnibench egress deny %s, part %d of %d", name, i+1, len(chunks)),
				"endpointSelector": map[string]any{"matchLabels": stringMap(endpointLabels)},
				"egress":           []any{map[string]any{"toEntities": []any{"all"}}},
				"egressDeny":       []any{map[string]any{"toCIDR": prefixesAny(chunks[i])}},
			},
		}}
	}}, nil
}

// CalicoDenyObjects returns Calico GlobalNetworkSets (crd.projectcalico.org/v1)
// holding the deny CIDRs, maxPerObject per set, named name-0, name-1… and
// labelled labels and DenySetKey=name, followed by one GlobalNetworkPolicy
// that denies the endpoints whose labels include podLabels (the client
// pod's; not empty) egress to the sets (destination selector DenySetKey ==
// name) and allows the rest, at order CalicoPolicyOrder. The policy is
// named "default."+name, the name Calico itself stores for a policy of its
// default tier. deny is normalised by NormalizeDeny; no deny CIDR
// makes no object. name must also be a valid label value. CalicoDenySet
// builds them lazily.
func CalicoDenyObjects(name string, podLabels map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) ([]*unstructured.Unstructured, error) {
	d, err := CalicoDenySet(name, podLabels, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	if d.Len() == 0 {
		return nil, nil
	}
	return d.All(), nil
}

// CalicoDenySet is CalicoDenyObjects, built one object at a time.
func CalicoDenySet(name string, podLabels map[string]string, deny []netip.Prefix, maxPerObject int, labels map[string]string) (*DenyObjects, error) {
	what := "calico deny objects " + name
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return nil, fmt.Errorf("%s: name is the %s label's value and not valid as one: %s", what, DenySetKey, errs[0])
	}
	chunks, err := denyChunks(what, name, podLabels, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	if len(chunks) == 0 {
		return &DenyObjects{}, nil
	}
	labels, podLabels = maps.Clone(labels), maps.Clone(podLabels)
	setLabels := maps.Clone(labels)
	if setLabels == nil {
		setLabels = map[string]string{}
	}
	setLabels[DenySetKey] = name
	return &DenyObjects{n: len(chunks) + 1, build: func(i int) *unstructured.Unstructured {
		if i < len(chunks) {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": CalicoGlobalNetworkSets.GroupVersion().String(),
				"kind":       "GlobalNetworkSet",
				"metadata":   objectMeta(name+"-"+strconv.Itoa(i), setLabels),
				"spec":       map[string]any{"nets": prefixesAny(chunks[i])},
			}}
		}
		return &unstructured.Unstructured{Object: map[string]any{
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
		}}
	}}, nil
}

// prefixesAny renders ps as the []any of strings unstructured content
// holds.
func prefixesAny(ps []netip.Prefix) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = p.String()
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
	return createEach(ctx, dyn, len(objs), func(i int) *unstructured.Unstructured { return objs[i] })
}

// CreateDenyObjects is CreateClusterObjects for a lazily built set: each
// object is built just before it is sent and dropped after.
func CreateDenyObjects(ctx context.Context, dyn dynamic.Interface, d *DenyObjects) (created, bytes int, err error) {
	return createEach(ctx, dyn, d.Len(), d.Object)
}

// createEach creates objects 0…n−1 of obj in order (CreateClusterObjects).
func createEach(ctx context.Context, dyn dynamic.Interface, n int, obj func(i int) *unstructured.Unstructured) (created, bytes int, err error) {
	if dyn == nil {
		return 0, 0, errors.New("create cluster objects: no dynamic client (kube.NewDynamicClient)")
	}
	for i := range n {
		o := obj(i)
		gvr, err := ResourceFor(o)
		if err != nil {
			return created, bytes, fmt.Errorf("create cluster objects: %w", err)
		}
		size := ObjectBytes(o.Object)
		rc := dyn.Resource(gvr)
		_, err = CreateOwn(ctx, fmt.Sprintf("create %s %s (%d of %d, %d bytes)", gvr.Resource, o.GetName(), i+1, n, size), o,
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
		bytes += size
		Logger(ctx).Debug("created", "resource", gvr.Resource, "name", o.GetName(), "bytes", size)
	}
	return created, bytes, nil
}
