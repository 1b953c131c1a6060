package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// runObjects returns a pod, service, secret and network policy of run
// runID in ns, named after the run.
func runObjects(ns, runID string) []runtime.Object {
	l := runLabels(runID)
	m := metav1.ObjectMeta{Name: "o-" + runID, Namespace: ns, Labels: l}
	return []runtime.Object{
		&corev1.Pod{ObjectMeta: m},
		&corev1.Service{ObjectMeta: m},
		&corev1.Secret{ObjectMeta: m},
		&networkingv1.NetworkPolicy{ObjectMeta: m},
	}
}

func ns(name string, l map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// clientset is a fake clientset whose namespace deletion deletes the
// namespace's content, as the namespace controller would.
func clientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("delete", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.(k8stesting.DeleteAction).GetName()
		for _, gvk := range []schema.GroupVersionKind{
			corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithKind("Service"),
			corev1.SchemeGroupVersion.WithKind("Secret"), networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
		} {
			gvr, _ := meta.UnsafeGuessKindToResource(gvk)
			l, err := cs.Tracker().List(gvr, gvk, ns)
			if err != nil {
				continue
			}
			items, _ := meta.ExtractList(l)
			for _, o := range items {
				m, _ := meta.Accessor(o)
				cs.Tracker().Delete(gvr, ns, m.GetName()) //nolint:errcheck
			}
		}
		return false, nil, nil
	})
	return cs
}

// inventory lists "kind ns/name" of the objects left in cs.
func inventory(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	pods, _ := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	for _, o := range pods.Items {
		out = append(out, "pod "+o.Namespace+"/"+o.Name)
	}
	svcs, _ := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	for _, o := range svcs.Items {
		out = append(out, "service "+o.Namespace+"/"+o.Name)
	}
	secrets, _ := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	for _, o := range secrets.Items {
		out = append(out, "secret "+o.Namespace+"/"+o.Name)
	}
	nps, _ := cs.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	for _, o := range nps.Items {
		out = append(out, "networkpolicy "+o.Namespace+"/"+o.Name)
	}
	nss, _ := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	for _, o := range nss.Items {
		out = append(out, "namespace "+o.Name)
	}
	slices.Sort(out)
	return out
}

func TestDeleteRun(t *testing.T) {
	objs := []runtime.Object{ns("cnibench-a", runLabels("a")), ns("shared", nil)}
	objs = append(objs, runObjects("cnibench-a", "a")...)
	objs = append(objs, runObjects("shared", "a")...)
	objs = append(objs, runObjects("shared", "b")...)
	objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "shared"}})
	ctx := context.Background()

	cs := clientset(objs...)
	if err := DeleteRun(ctx, cs, "shared", "a", false, time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{"namespace cnibench-a", "namespace shared", "networkpolicy cnibench-a/o-a", "networkpolicy shared/o-b",
		"pod cnibench-a/o-a", "pod shared/o-b", "pod shared/user", "secret cnibench-a/o-a", "secret shared/o-b", "service cnibench-a/o-a", "service shared/o-b"}
	if got := inventory(t, cs); !slices.Equal(got, want) {
		t.Errorf("left:\n%v\nwant\n%v", got, want)
	}

	if err := DeleteRun(ctx, cs, "cnibench-a", "a", true, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := inventory(t, cs); slices.Contains(got, "namespace cnibench-a") || slices.Contains(got, "pod cnibench-a/o-a") {
		t.Errorf("namespace left: %v", got)
	}

	// A namespace that is not the run's is never deleted.
	err := DeleteRun(ctx, cs, "shared", "b", true, time.Second)
	if err == nil || !strings.Contains(err.Error(), "namespace shared not deleted") {
		t.Errorf("err = %v", err)
	}
	if got := inventory(t, cs); !slices.Contains(got, "namespace shared") || slices.Contains(got, "pod shared/o-b") {
		t.Errorf("left: %v", got)
	}
	// Nothing left is no error, the namespace already gone neither.
	if err := DeleteRun(ctx, cs, "cnibench-a", "a", true, time.Second); err != nil {
		t.Errorf("again: %v", err)
	}
}

func TestDeleteRunTimeout(t *testing.T) {
	cs := clientset(runObjects("ns", "a")...)
	// A pod that does not go away (a node that is down).
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	start := time.Now()
	err := DeleteRun(context.Background(), cs, "ns", "a", false, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still present after 100ms: pod ns/o-a") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	if got := inventory(t, cs); !slices.Equal(got, []string{"pod ns/o-a"}) {
		t.Errorf("left: %v", got)
	}
}

func TestClean(t *testing.T) {
	objs := []runtime.Object{ns("cnibench-a", runLabels("a")), ns("cnibench-b", runLabels("b")), ns("default", nil)}
	objs = append(objs, runObjects("cnibench-a", "a")...)
	objs = append(objs, runObjects("default", "c")...)
	objs = append(objs, runObjects("other", "d")...)
	objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "default"}})
	ctx := context.Background()

	cs := clientset(objs...)
	removed, err := Clean(ctx, cs, "default", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"networkpolicy default/o-c", "pod default/o-c", "service default/o-c", "secret default/o-c"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}

	removed, err = Clean(ctx, cs, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"networkpolicy other/o-d", "pod other/o-d", "service other/o-d", "secret other/o-d", "namespace cnibench-a", "namespace cnibench-b"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if left := inventory(t, cs); !slices.Equal(left, []string{"namespace default", "pod default/user"}) {
		t.Errorf("left: %v", left)
	}

	removed, err = Clean(ctx, cs, "", time.Second)
	if err != nil || len(removed) != 0 {
		t.Errorf("nothing to clean: removed %v, err %v", removed, err)
	}
}

// Clean with CleanPolicyObjects also removes the CNIs' cluster-scoped
// policy objects of cnibench's runs (of the namespace's runs when given
// one), skips the resources the cluster does not serve, and removes
// labelled endpoint slices.
func TestCleanPolicyObjects(t *testing.T) {
	ctx := context.Background()
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "svc-0", Namespace: "default", Labels: runLabels("r1")}}
	cs := clientset(ns("default", nil), slice)
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		apiResources("cilium.io/v2", "ciliumnetworkpolicies", "ciliumclusterwidenetworkpolicies"),
	}
	gns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "GlobalNetworkSet", "metadata": map[string]any{"name": "set"},
	}}
	gns.SetLabels(runLabels("r1"))
	dyn := dynamicClient(ccnp("a", ClusterObjectLabels("default", "r1")), ccnp("b", ClusterObjectLabels("other", "r2")),
		ccnp("c", runLabels("r3")), ccnp("user", nil), gns)

	removed, err := Clean(ctx, cs, "default", time.Second, CleanPolicyObjects(dyn))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"endpointslice default/svc-0", "ciliumclusterwidenetworkpolicy a"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	removed, err = Clean(ctx, cs, "", time.Second, CleanPolicyObjects(dyn))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ciliumclusterwidenetworkpolicy b", "ciliumclusterwidenetworkpolicy c"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	l, err := dyn.Resource(CiliumClusterwidePolicies).List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].GetName() != "user" {
		t.Errorf("left %v, %v", l, err)
	}
	// Calico is not served: its resources are not even listed.
	for _, a := range dyn.Actions() {
		if a.GetResource().Group == CalicoGlobalNetworkSets.Group {
			t.Errorf("action on a resource not served: %v", a)
		}
	}
	if _, err := dyn.Resource(CalicoGlobalNetworkSets).Get(ctx, "set", metav1.GetOptions{}); err != nil {
		t.Errorf("calico set: %v", err)
	}

	// Discovery failing is an error, the rest is cleaned all the same.
	cs = clientset(ns("default", nil), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: runLabels("r1")}})
	cs.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("discovery down")
	})
	removed, err = Clean(ctx, cs, "default", time.Second, CleanPolicyObjects(dynamicClient()))
	if err == nil || !strings.Contains(err.Error(), "clean ciliumclusterwidenetworkpolicies: discover the resources of cilium.io/v2: gave up after 3 attempts, the last: discovery down") {
		t.Errorf("err = %v", err)
	}
	if !slices.Equal(removed, []string{"pod default/p"}) {
		t.Errorf("removed %v", removed)
	}
}

// TestDeleteRunPoliciesFirst: a run's network policies are deleted before
// its pods (kinds' order), so that a CNI drops the policy before it tears
// down the pods it selects.
func TestDeleteRunPoliciesFirst(t *testing.T) {
	cs := clientset(runObjects("ns", "a")...)
	if err := DeleteRun(context.Background(), cs, "ns", "a", false, time.Second); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetResource().Resource)
		}
	}
	want := []string{"networkpolicies", "pods", "services", "secrets"}
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted in the order %v, want %v", deleted, want)
	}
}
