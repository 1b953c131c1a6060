package kube

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// etcdRequestLimit is etcd's default request limit (--max-request-bytes).
const etcdRequestLimit = 1536 * 1024

// hostPrefixes returns n /32s of the longest text ("200.200.x.y/32"
// holds 14 to 18 characters; these all hold 18 with 3-digit octets).
func hostPrefixes(n int) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := 0; len(out) < n; i++ {
		a, b := byte(100+i/100%100), byte(100+i%100)
		c := byte(100 + i/10000)
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{200, c, a, b}), 32))
	}
	return out
}

// One object of each kind at the default chunk holds the longest CIDR
// texts and stays under etcd's 1.5 MiB request limit with room to spare.
func TestDenyObjectsUnderRequestLimit(t *testing.T) {
	deny := hostPrefixes(DefaultPolicyChunk)
	if s := deny[len(deny)-1].String(); len(s) != len("200.200.200.200/32") {
		t.Fatalf("the test's CIDRs are not the longest: %s", s)
	}
	pod := map[string]string{RunKey: "r1"}
	cil, err := CiliumDenySet("cnb-r1-deny", pod, deny, DefaultPolicyChunk, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	cal, err := CalicoDenySet("cnb-r1-deny", pod, deny, DefaultPolicyChunk, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range append(cil.Kinds(), cal.Kinds()...) {
		n := ObjectBytes(o.Object)
		t.Logf("%s with %d CIDRs: %d bytes (%.1f per CIDR)", o.GetKind(), DefaultPolicyChunk, n, float64(n)/DefaultPolicyChunk)
		if o.GetKind() != "GlobalNetworkPolicy" && (n < DefaultPolicyChunk*18 || n > etcdRequestLimit*3/4) {
			t.Errorf("%s: %d bytes: want the CIDRs in it, within three quarters of etcd's %d", o.GetKind(), n, etcdRequestLimit)
		}
	}
	if cil.Len() != 1 || cal.Len() != 2 {
		t.Errorf("%d Cilium and %d Calico objects, want 1 and 2", cil.Len(), cal.Len())
	}
}

// A lazy set builds the same objects as the eager builders, each a fresh
// copy.
func TestDenySetLazy(t *testing.T) {
	deny := hostPrefixes(25)
	pod := map[string]string{RunKey: "r1"}
	eager, err := CalicoDenyObjects("d", pod, deny, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := CalicoDenySet("d", pod, deny, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != len(eager) || set.Len() != 4 {
		t.Fatalf("%d lazy, %d eager objects, want 4", set.Len(), len(eager))
	}
	for i := range set.Len() {
		if ObjectBytes(set.Object(i).Object) != ObjectBytes(eager[i].Object) || set.Object(i).GetName() != eager[i].GetName() {
			t.Errorf("object %d differs", i)
		}
	}
	if set.Object(0) == set.Object(0) {
		t.Error("Object returns one object twice")
	}
	if k := set.Kinds(); len(k) != 2 || k[0].GetKind() != "GlobalNetworkSet" || k[1].GetKind() != "GlobalNetworkPolicy" {
		t.Errorf("kinds %v", k)
	}
}

// Creates retry passing trouble (429, etcd's "too many requests" and
// leader changes, 503) with backoff and succeed; etcd's "request is too
// large" is refused for good at once, with what was created before it.
func TestCreateDenyObjectsBackoff(t *testing.T) {
	ctx := WithRetryPolicy(context.Background(), RetryPolicy{Attempts: 5, Backoff: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	set, err := CiliumDenySet("d", map[string]string{RunKey: "r1"}, hostPrefixes(30), 10, ClusterObjectLabels("bench", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("passing trouble", func(t *testing.T) {
		dyn := dynamicClient()
		var calls atomic.Int32
		trouble := []error{apierrors.NewTooManyRequests("slow down", 0), apierrors.NewInternalError(errors.New("etcdserver: too many requests")),
			apierrors.NewInternalError(errors.New("etcdserver: leader changed")), apierrors.NewServiceUnavailable("apiserver starting")}
		dyn.PrependReactor("create", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			if n := int(calls.Add(1)); n <= len(trouble) {
				return true, nil, trouble[n-1]
			}
			return false, nil, nil
		})
		n, b, err := CreateDenyObjects(ctx, dyn, set)
		if err != nil || n != 3 || b <= 0 || calls.Load() != int32(len(trouble))+3 {
			t.Errorf("created %d (%d bytes) in %d calls: %v", n, b, calls.Load(), err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		dyn := dynamicClient()
		var calls atomic.Int32
		dyn.PrependReactor("create", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			if calls.Add(1) == 2 {
				return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request is too large"))
			}
			return false, nil, nil
		})
		n, b, err := CreateDenyObjects(ctx, dyn, set)
		if err == nil || !strings.Contains(err.Error(), "request is too large") || n != 1 || b <= 0 || calls.Load() != 2 {
			t.Errorf("created %d (%d bytes) in %d calls: %v; want 1, refused at once", n, b, calls.Load(), err)
		}
		if _, err := DeleteClusterObjects(context.WithoutCancel(ctx), dyn, CiliumClusterwidePolicies, RunSelector("r1"), time.Second); err != nil {
			t.Fatal(err)
		}
		if l, _ := dyn.Resource(CiliumClusterwidePolicies).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("%d left", len(l.Items))
		}
	})
}

// Every cluster-scoped kind the egress scenario creates is one that
// `cnibench k8s clean` removes: objects built and created as the scenario
// does, left by a run that died, are all found by Clean of the run's
// namespace.
func TestCleanFindsEveryDenyKind(t *testing.T) {
	ctx := context.Background()
	pod := map[string]string{RunKey: "r1"}
	labels := ClusterObjectLabels("bench", "r1")
	cil, err := CiliumDenySet("cnb-r1-deny", pod, hostPrefixes(5), 2, labels)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := CalicoDenySet("cnb-r1-deny", pod, hostPrefixes(5), 2, labels)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamicClient()
	var kinds []string
	for _, set := range []*DenyObjects{cil, cal} {
		if _, _, err := CreateDenyObjects(ctx, dyn, set); err != nil {
			t.Fatal(err)
		}
		for _, o := range set.All() {
			gvr, err := ResourceFor(o)
			if err != nil || !slices.Contains(ClusterPolicyResources, gvr) {
				t.Errorf("%s %s: resource %v (%v) is not one Clean removes", o.GetKind(), o.GetName(), gvr, err)
			}
			if !slices.Contains(kinds, o.GetKind()) {
				kinds = append(kinds, o.GetKind())
			}
		}
	}
	if len(kinds) != 3 {
		t.Errorf("kinds %v, want CiliumClusterwideNetworkPolicy, GlobalNetworkSet, GlobalNetworkPolicy", kinds)
	}
	cs := clientset(ns("bench", nil))
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		apiResources("cilium.io/v2", "ciliumclusterwidenetworkpolicies"),
		apiResources("crd.projectcalico.org/v1", "globalnetworksets", "globalnetworkpolicies"),
	}
	removed, err := Clean(ctx, cs, "bench", time.Second, CleanPolicyObjects(dyn))
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != cil.Len()+cal.Len() {
		t.Errorf("removed %v, want all %d objects", removed, cil.Len()+cal.Len())
	}
	for _, gvr := range ClusterPolicyResources {
		if l, _ := dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("%s: %d left after clean", gvr.Resource, len(l.Items))
		}
	}
}

// NormalizeDeny returns a deny set that is already normalised as it is (no
// copy), and a new, normalised slice otherwise, leaving its input alone.
func TestNormalizeDenyNoCopy(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tt := range []struct {
		in   []netip.Prefix
		want []netip.Prefix
		same bool
	}{
		{[]netip.Prefix{p("10.0.0.0/24"), p("10.0.1.0/24"), p("11.0.0.1/32")}, nil, true},
		{[]netip.Prefix{p("10.0.1.0/24"), p("10.0.0.0/24")}, []netip.Prefix{p("10.0.0.0/24"), p("10.0.1.0/24")}, false},
		{[]netip.Prefix{p("10.0.0.0/16"), p("10.0.1.0/24")}, []netip.Prefix{p("10.0.0.0/16")}, false},
		{[]netip.Prefix{p("10.0.0.0/24"), p("10.0.0.0/24")}, []netip.Prefix{p("10.0.0.0/24")}, false},
		{[]netip.Prefix{p("10.0.0.1/24")}, []netip.Prefix{p("10.0.0.0/24")}, false},
	} {
		in := slices.Clone(tt.in)
		got, err := NormalizeDeny(in)
		if err != nil {
			t.Fatal(err)
		}
		want := tt.want
		if tt.same {
			want = tt.in
		}
		if !slices.Equal(got, want) || tt.same != (len(got) > 0 && &got[0] == &in[0]) || !slices.Equal(in, tt.in) {
			t.Errorf("%v: got %v (same slice %v), want %v (same %v); input now %v", tt.in, got, len(got) > 0 && &got[0] == &in[0], want, tt.same, in)
		}
	}
}
