package kube

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/kube/kubetest"
)

// apiResources is discovery's answer for gv serving resources.
func apiResources(gv string, resources ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range resources {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
	}
	return l
}

// discoveryServing returns a fake clientset whose discovery serves lists.
func discoveryServing(lists ...*metav1.APIResourceList) *fake.Clientset {
	cs := fake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = lists
	return cs
}

func TestServed(t *testing.T) {
	cilium := apiResources("cilium.io/v2", "ciliumnetworkpolicies", "ciliumclusterwidenetworkpolicies")
	calicoPartial := apiResources("crd.projectcalico.org/v1", "globalnetworkpolicies")
	tests := []struct {
		name  string
		lists []*metav1.APIResourceList
		gvrs  []schema.GroupVersionResource
		err   string
	}{
		{name: "cilium", lists: []*metav1.APIResourceList{cilium}, gvrs: []schema.GroupVersionResource{CiliumClusterwidePolicies}},
		{name: "nothing asked", gvrs: nil},
		{name: "no cilium", lists: []*metav1.APIResourceList{calicoPartial}, gvrs: []schema.GroupVersionResource{CiliumClusterwidePolicies},
			err: "cilium.io/v2 ciliumclusterwidenetworkpolicies not served by this cluster (the API server has no group version cilium.io/v2: the CNI or its CRDs are not installed)"},
		{name: "calico without sets", lists: []*metav1.APIResourceList{cilium, calicoPartial}, gvrs: []schema.GroupVersionResource{CalicoGlobalNetworkPolicies, CalicoGlobalNetworkSets},
			err: "crd.projectcalico.org/v1 globalnetworksets not served by this cluster (crd.projectcalico.org/v1 is served without globalnetworksets: the CRD is not installed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Served(context.Background(), discoveryServing(tt.lists...).Discovery(), tt.gvrs...)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.err || !IsNotServed(err) {
				t.Errorf("err = %v\nwant %s (NotServedError)", err, tt.err)
			}
		})
	}

	cs := discoveryServing(cilium)
	cs.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))
	})
	err := Served(context.Background(), cs.Discovery(), CiliumClusterwidePolicies)
	if err == nil || IsNotServed(err) || !strings.Contains(err.Error(), "discover the resources of cilium.io/v2: ") {
		t.Errorf("discovery error: %v", err)
	}
	if err := Served(context.Background(), nil, CiliumClusterwidePolicies); err == nil {
		t.Error("nil discovery: no error")
	}
}

// field returns the value at path of o's content.
func field(t *testing.T, o *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s: no %v (%v)", o.GetName(), path, err)
	}
	return v
}

func TestCiliumDenyPolicies(t *testing.T) {
	pod := map[string]string{RoleKey: "client", RunKey: "r1"}
	deny := prefixes(t, "240.0.0.3/32", "240.0.0.1/32", "240.0.0.0/24", "10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12")
	objs, err := CiliumDenyPolicies("cnb-r1-deny", pod, deny, 2, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	for i, o := range objs {
		if o.GetName() != fmt.Sprintf("cnb-r1-deny-%d", i) || o.GetKind() != "CiliumClusterwideNetworkPolicy" || o.GetAPIVersion() != "cilium.io/v2" ||
			o.GetNamespace() != "" || o.GetLabels()[NamespaceKey] != "bench" || o.GetLabels()[ManagedByKey] != ManagedBy {
			t.Errorf("object %d: %v", i, o.Object)
		}
		if sel := field(t, o, "spec", "endpointSelector", "matchLabels"); fmt.Sprint(sel) != fmt.Sprint(map[string]any{RoleKey: "client", RunKey: "r1"}) {
			t.Errorf("%s: selector %v", o.GetName(), sel)
		}
		if eg := field(t, o, "spec", "egress"); fmt.Sprint(eg) != "[map[toEntities:[all]]]" {
			t.Errorf("%s: egress %v", o.GetName(), eg)
		}
		got = append(got, field(t, o, "spec", "egressDeny").([]any)[0].(map[string]any)["toCIDR"].([]any))
		if gvr, err := ResourceFor(o); err != nil || gvr != CiliumClusterwidePolicies {
			t.Errorf("ResourceFor: %v %v", gvr, err)
		}
		o.DeepCopy() // unstructured content only
	}
	// Normalised (240.0.0.1 and .3 inside 240.0.0.0/24), sorted, 2 per object.
	if fmt.Sprint(got) != "[[10.0.0.0/8 172.16.0.0/12] [192.168.0.0/16 240.0.0.0/24]]" {
		t.Errorf("toCIDR chunks %v", got)
	}

	if objs, err := CiliumDenyPolicies("d", pod, nil, 2, nil); err != nil || len(objs) != 0 {
		t.Errorf("no deny CIDRs: %v, %v", objs, err)
	}
}

func TestCalicoDenyObjects(t *testing.T) {
	pod := map[string]string{RunKey: "r1", RoleKey: "client"}
	deny := prefixes(t, "10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12")
	objs, err := CalicoDenyObjects("cnb-r1-deny", pod, deny, 2, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("%d objects", len(objs))
	}
	for i, o := range objs[:2] {
		if o.GetName() != fmt.Sprintf("cnb-r1-deny-%d", i) || o.GetKind() != "GlobalNetworkSet" || o.GetAPIVersion() != "crd.projectcalico.org/v1" ||
			o.GetLabels()[DenySetKey] != "cnb-r1-deny" || o.GetLabels()[RunKey] != "r1" {
			t.Errorf("set %d: %v", i, o.Object)
		}
		o.DeepCopy()
	}
	if n0, n1 := fmt.Sprint(field(t, objs[0], "spec", "nets")), fmt.Sprint(field(t, objs[1], "spec", "nets")); n0 != "[10.0.0.0/8 172.16.0.0/12]" || n1 != "[192.168.0.0/16]" {
		t.Errorf("nets %s %s", n0, n1)
	}
	p := objs[2]
	p.DeepCopy()
	if p.GetName() != "default.cnb-r1-deny" || p.GetKind() != "GlobalNetworkPolicy" || p.GetLabels()[DenySetKey] != "" || p.GetLabels()[NamespaceKey] != "bench" {
		t.Errorf("policy %v", p.Object)
	}
	if s := field(t, p, "spec", "selector"); s != "cnibench.io/role == 'client' && cnibench.io/run == 'r1'" {
		t.Errorf("selector %q", s)
	}
	if o := field(t, p, "spec", "order"); o != int64(CalicoPolicyOrder) {
		t.Errorf("order %v", o)
	}
	if eg := fmt.Sprint(field(t, p, "spec", "egress")); eg != "[map[action:Deny destination:map[selector:cnibench.io/deny-set == 'cnb-r1-deny']] map[action:Allow]]" {
		t.Errorf("egress %s", eg)
	}
	if ty := fmt.Sprint(field(t, p, "spec", "types")); ty != "[Egress]" {
		t.Errorf("types %s", ty)
	}
	if objs, err := CalicoDenyObjects("d", pod, nil, 2, nil); err != nil || len(objs) != 0 {
		t.Errorf("no deny CIDRs: %v, %v", objs, err)
	}
}

func TestCRDPolicyErrors(t *testing.T) {
	pod := map[string]string{RoleKey: "client"}
	good := prefixes(t, "10.0.0.0/8")
	builders := map[string]func(string, map[string]string, []netip.Prefix, int, map[string]string) error{
		"cilium deny policies": func(n string, p map[string]string, d []netip.Prefix, m int, l map[string]string) error {
			_, err := CiliumDenyPolicies(n, p, d, m, l)
			return err
		},
		"calico deny objects": func(n string, p map[string]string, d []netip.Prefix, m int, l map[string]string) error {
			_, err := CalicoDenyObjects(n, p, d, m, l)
			return err
		},
	}
	tests := []struct {
		name   string
		policy string
		pod    map[string]string
		deny   []netip.Prefix
		max    int
		labels map[string]string
		err    string
	}{
		{name: "no pod labels", policy: "d", deny: good, max: 1, err: "no pod labels to select the client by"},
		{name: "bad pod label", policy: "d", pod: map[string]string{"a": "'x'"}, deny: good, max: 1, err: "pod selector: label a=\"'x'\""},
		{name: "ipv6", policy: "d", pod: pod, deny: prefixes(t, "fd00::/8"), max: 1, err: "deny CIDR fd00::/8 is not IPv4"},
		{name: "zero max", policy: "d", pod: pod, deny: good, max: 0, err: "0 deny CIDRs per object"},
		{name: "bad name", policy: "A", pod: pod, deny: good, max: 1, err: `"A-0" (from name "A") is not valid`},
		{name: "bad label", policy: "d", pod: pod, deny: good, max: 1, labels: map[string]string{"-x": "y"}, err: `label key "-x" is not valid`},
	}
	for bname, build := range builders {
		for _, tt := range tests {
			t.Run(bname+"/"+tt.name, func(t *testing.T) {
				err := build(tt.policy, tt.pod, tt.deny, tt.max, tt.labels)
				if err == nil || !strings.HasPrefix(err.Error(), bname+" "+tt.policy+": ") || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
					t.Errorf("err = %v, want %q", err, tt.err)
				}
			})
		}
	}
	long := strings.Repeat("a", 64)
	if _, err := CalicoDenyObjects(long, pod, good, 1, nil); err == nil || !strings.Contains(err.Error(), "not valid as one") {
		t.Errorf("long name: %v", err)
	}
	if _, err := ResourceFor(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}}); err == nil ||
		!strings.Contains(err.Error(), "object p: kind /v1, Kind=Pod is not one of the cluster policy kinds") {
		t.Errorf("ResourceFor(pod): %v", err)
	}
	if _, err := ResourceFor(nil); err == nil {
		t.Error("ResourceFor(nil): no error")
	}
}

// dynamicClient is a fake dynamic client that knows the cluster policy
// resources and implements deletecollection.
func dynamicClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		CiliumClusterwidePolicies:   "CiliumClusterwideNetworkPolicyList",
		CalicoGlobalNetworkSets:     "GlobalNetworkSetList",
		CalicoGlobalNetworkPolicies: "GlobalNetworkPolicyList",
	}, objs...)
	kinds := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for gvk, gvr := range clusterPolicyKinds {
		kinds[gvr] = gvk
	}
	dyn.PrependReactor("delete-collection", "*", kubetest.DeleteCollectionReactor(dyn.Tracker(), kinds))
	return dyn
}

func TestCreateClusterObjects(t *testing.T) {
	ctx := context.Background()
	pod := map[string]string{RoleKey: "client"}
	objs, err := CalicoDenyObjects("deny", pod, prefixes(t, "10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8"), 2, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	cil, err := CiliumDenyPolicies("deny", pod, prefixes(t, "10.0.0.0/8"), 2, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	objs = append(objs, cil...)
	want := 0
	for _, o := range objs {
		want += ObjectBytes(o)
	}
	dyn := dynamicClient()
	n, size, err := CreateClusterObjects(ctx, dyn, objs)
	if err != nil || n != 4 || size != want || size == 0 {
		t.Fatalf("created %d (%d bytes, want %d), err %v", n, size, want, err)
	}
	got, err := dyn.Resource(CalicoGlobalNetworkSets).List(ctx, metav1.ListOptions{LabelSelector: DenySetKey + "=deny"})
	if err != nil || len(got.Items) != 2 {
		t.Fatalf("sets %v, %v", got, err)
	}
	if _, err := dyn.Resource(CalicoGlobalNetworkPolicies).Get(ctx, "default.deny", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}

	// Again: the first exists, nothing more is created.
	n, size, err = CreateClusterObjects(ctx, dyn, objs)
	if n != 0 || size != 0 || err == nil || !strings.Contains(err.Error(), "create globalnetworksets deny-0 (1 of 4, ") || !strings.Contains(err.Error(), "cnibench k8s clean removes it") {
		t.Errorf("again: %d, %d, %v", n, size, err)
	}

	// An error midway: what was created is counted.
	dyn = dynamicClient()
	dyn.PrependReactor("create", "globalnetworkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	})
	n, size, err = CreateClusterObjects(ctx, dyn, objs)
	if n != 2 || size != ObjectBytes(objs[0])+ObjectBytes(objs[1]) || err == nil || !strings.Contains(err.Error(), "create globalnetworkpolicies default.deny (3 of 4") ||
		!strings.Contains(err.Error(), "lower the deny CIDRs per object") {
		t.Errorf("midway: %d, %d, %v", n, size, err)
	}

	pod0 := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}}
	if n, _, err := CreateClusterObjects(ctx, dynamicClient(), []*unstructured.Unstructured{pod0}); n != 0 || err == nil {
		t.Errorf("unknown kind: %d, %v", n, err)
	}
	if _, _, err := CreateClusterObjects(ctx, nil, objs); err == nil {
		t.Error("nil client: no error")
	}
}

// ccnp is a CiliumClusterwideNetworkPolicy labelled l.
func ccnp(name string, l map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
		"metadata": map[string]any{"name": name},
	}}
	o.SetLabels(l)
	return o
}

func TestDeleteClusterObjects(t *testing.T) {
	ctx := context.Background()
	objs := func() []runtime.Object {
		return []runtime.Object{ccnp("a", runLabels("r1")), ccnp("b", runLabels("r1")), ccnp("c", runLabels("r2")), ccnp("user", nil)}
	}
	names := func(dyn *dynamicfake.FakeDynamicClient) []string {
		l, err := dyn.Resource(CiliumClusterwidePolicies).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range l.Items {
			out = append(out, o.GetName())
		}
		slices.Sort(out)
		return out
	}
	refused := func(verb string) func(k8stesting.Action) (bool, runtime.Object, error) {
		return func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewMethodNotSupported(CiliumClusterwidePolicies.GroupResource(), verb)
		}
	}
	tests := []struct {
		name    string
		react   func(*dynamicfake.FakeDynamicClient)
		sel     string
		removed []string
		left    []string
		err     string
	}{
		{name: "deletecollection", sel: runSelector("r1"), removed: []string{"ciliumclusterwidenetworkpolicy a", "ciliumclusterwidenetworkpolicy b"}, left: []string{"c", "user"}},
		{name: "one by one", sel: runSelector("r1"), removed: []string{"ciliumclusterwidenetworkpolicy a", "ciliumclusterwidenetworkpolicy b"}, left: []string{"c", "user"},
			react: func(d *dynamicfake.FakeDynamicClient) {
				d.PrependReactor("delete-collection", "*", refused("deletecollection"))
			}},
		{name: "all of cnibench", sel: ManagedByKey + "=" + ManagedBy, removed: []string{"ciliumclusterwidenetworkpolicy a", "ciliumclusterwidenetworkpolicy b", "ciliumclusterwidenetworkpolicy c"}, left: []string{"user"}},
		{name: "nothing", sel: runSelector("r9"), left: []string{"a", "b", "c", "user"}},
		{name: "not served", sel: runSelector("r1"), left: []string{"a", "b", "c", "user"},
			react: func(d *dynamicfake.FakeDynamicClient) {
				d.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewNotFound(CiliumClusterwidePolicies.GroupResource(), "")
				})
			}},
		{name: "empty selector", sel: "", left: []string{"a", "b", "c", "user"}, err: "empty label selector refused"},
		{name: "delete fails", sel: runSelector("r1"), left: []string{"a", "b", "c", "user"}, err: "delete ciliumclusterwidenetworkpolicies a: ",
			react: func(d *dynamicfake.FakeDynamicClient) {
				d.PrependReactor("delete-collection", "*", refused("deletecollection"))
				d.PrependReactor("delete", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(CiliumClusterwidePolicies.GroupResource(), "a", errors.New("no"))
				})
			}},
		{name: "never gone", sel: runSelector("r1"), removed: []string{"ciliumclusterwidenetworkpolicy a", "ciliumclusterwidenetworkpolicy b"}, left: []string{"a", "b", "c", "user"},
			err: "still present after 50ms: ciliumclusterwidenetworkpolicy a, ciliumclusterwidenetworkpolicy b",
			react: func(d *dynamicfake.FakeDynamicClient) {
				d.PrependReactor("delete-collection", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dyn := dynamicClient(objs()...)
			if tt.react != nil {
				tt.react(dyn)
			}
			removed, err := DeleteClusterObjects(ctx, dyn, CiliumClusterwidePolicies, tt.sel, 50*time.Millisecond)
			if tt.err == "" && err != nil {
				t.Fatal(err)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
			if !slices.Equal(removed, tt.removed) {
				t.Errorf("removed %v, want %v", removed, tt.removed)
			}
			// "not served" lists nothing; look at the tracker instead.
			if tt.name != "not served" {
				if got := names(dyn); !slices.Equal(got, tt.left) {
					t.Errorf("left %v, want %v", got, tt.left)
				}
			}
		})
	}
}
