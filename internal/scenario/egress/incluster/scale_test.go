package incluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/internal/kube/kubetest"
	"github.com/cnibench/cnibench/internal/procfs"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

// ciliumAccess is a cluster serving CiliumClusterwideNetworkPolicies
// through a fake dynamic client (deletecollection included), whose agent
// refuses the denied server once such an object exists, and whose CNI runs
// one agent pod (kube-system/cilium-a) whose restarts a test may bump.
func ciliumAccess(t *testing.T) (*cluster.Access, *dynamicfake.FakeDynamicClient, *fake.Clientset) {
	t.Helper()
	ca, cs := fakeAccess(t, true)
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "cilium.io/v2",
		APIResources: []metav1.APIResource{{Name: "ciliumclusterwidenetworkpolicies"}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(kruntime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.CiliumClusterwidePolicies: "CiliumClusterwideNetworkPolicyList"})
	dyn.PrependReactor("create", "*", dryRunReactor(nil))
	gvr := kube.CiliumClusterwidePolicies
	dyn.PrependReactor("delete-collection", "*", kubetest.DeleteCollectionReactor(dyn.Tracker(),
		map[schema.GroupVersionResource]schema.GroupVersionKind{gvr: gvr.GroupVersion().WithKind("CiliumClusterwideNetworkPolicy")}))
	ca.Dynamic = dyn
	count := func() int {
		l, err := dyn.Resource(kube.CiliumClusterwidePolicies).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Error(err)
		}
		return len(l.Items)
	}
	ca.Agent = watchAgent(count, true)
	if _, err := cs.CoreV1().Pods("kube-system").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cilium-a", Namespace: "kube-system", UID: "u1"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "cilium-agent", RestartCount: 1}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ca.CNILogs = func(ctx context.Context) *cluster.CNILogWindow {
		return cluster.OpenCNILogWindow(ctx, cs, []cni.PodRef{{Namespace: "kube-system", Name: "cilium-a"}}, time.Now())
	}
	return ca, dyn, cs
}

// restartAgent bumps the fake agent's restart count, as a crash would.
func restartAgent(t *testing.T, cs *fake.Clientset) {
	p, err := cs.CoreV1().Pods("kube-system").Get(context.Background(), "cilium-a", metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	p.Status.ContainerStatuses[0].RestartCount++
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}
	if _, err := cs.CoreV1().Pods("kube-system").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Error(err)
	}
}

func ccnpLeft(t *testing.T, dyn *dynamicfake.FakeDynamicClient) int {
	t.Helper()
	l, err := dyn.Resource(kube.CiliumClusterwidePolicies).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// A create refused for good (etcd's request limit) fails the point at once,
// without retries: a scenario.PointFailure with what was sent before, the
// CNI agent's restart with its last state and its log's account; every
// object created is removed.
func TestPreparePolicyFailureEvidence(t *testing.T) {
	ca, dyn, cs := ciliumAccess(t)
	var creates atomic.Int32
	dyn.PrependReactor("create", "ciliumclusterwidenetworkpolicies", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if len(a.(k8stesting.CreateActionImpl).GetCreateOptions().DryRun) > 0 {
			return false, nil, nil
		}
		if creates.Add(1) == 2 {
			restartAgent(t, cs)
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request is too large"))
		}
		return false, nil, nil
	})
	_, err := PreparePolicy(context.Background(), ca, MechCiliumPolicy, 30, 7, Options{Chunk: 10, Wait: time.Second})
	var pf *scenario.PointFailure
	if !errors.As(err, &pf) || !strings.Contains(err.Error(), "request is too large") {
		t.Fatalf("err %v: want a PointFailure with etcd's refusal", err)
	}
	if creates.Load() != 2 {
		t.Errorf("%d creates: a refusal for good was retried", creates.Load())
	}
	ev := strings.Join(pf.Evidence, "\n")
	for _, want := range []string{"sent 1 of 3 object(s) before the failure", "kube-system/cilium-a container cilium-agent: restarted 1 time(s) since the point started; last terminated: OOMKilled, exit code 137",
		"kube-system/cilium-a/cilium-agent", "after the removal the CNI's pods were Ready"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if pf.Metrics[MetricPolicyObjects] != 1 || pf.Metrics[MetricPolicyBytes] <= 0 || pf.Metrics["cni_restarts"] != 1 {
		t.Errorf("metrics %v", pf.Metrics)
	}
	if n := ccnpLeft(t, dyn); n != 0 {
		t.Errorf("%d objects left", n)
	}
}

// A deny that held while the CNI's agent restarted fails the point, with
// the evidence; nothing is left.
func TestPreparePolicyAgentRestarted(t *testing.T) {
	ca, dyn, cs := ciliumAccess(t)
	dyn.PrependReactor("create", "ciliumclusterwidenetworkpolicies", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if len(a.(k8stesting.CreateActionImpl).GetCreateOptions().DryRun) == 0 {
			restartAgent(t, cs)
		}
		return false, nil, nil
	})
	_, err := PreparePolicy(context.Background(), ca, MechCiliumPolicy, 10, 7, Options{Wait: time.Second})
	var pf *scenario.PointFailure
	if !errors.As(err, &pf) || !strings.Contains(err.Error(), "the CNI's pods restarted 1 time(s) meanwhile") {
		t.Fatalf("err %v", err)
	}
	if n := ccnpLeft(t, dyn); n != 0 {
		t.Errorf("%d objects left", n)
	}
}

// Passing trouble during the creates (429, etcd's too many requests) is
// retried with backoff; the point is measured, with cnibench's own peak
// RSS and the proof's wait in the config.
func TestPreparePolicyBackoff(t *testing.T) {
	ca, dyn, _ := ciliumAccess(t)
	var creates atomic.Int32
	dyn.PrependReactor("create", "ciliumclusterwidenetworkpolicies", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if len(a.(k8stesting.CreateActionImpl).GetCreateOptions().DryRun) > 0 {
			return false, nil, nil
		}
		switch creates.Add(1) {
		case 1:
			return true, nil, apierrors.NewTooManyRequests("slow down", 0)
		case 3:
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: too many requests"))
		}
		return false, nil, nil
	})
	ctx := kube.WithRetryPolicy(context.Background(), kube.RetryPolicy{Backoff: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	p, err := PreparePolicy(ctx, ca, MechCiliumPolicy, 30, 7, Options{Chunk: 10, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Metrics()
	if m[MetricPolicyObjects] != 3 || creates.Load() != 5 {
		t.Errorf("%v objects in %d creates, want 3 in 5", m[MetricPolicyObjects], creates.Load())
	}
	if runtime.GOOS == "linux" && m[filter.SuitePeakRSSBytes] <= 0 {
		t.Errorf("no %s: %v", filter.SuitePeakRSSBytes, m)
	}
	if p.Config()["filter_proof_wait"] != "1s" {
		t.Errorf("config %v", p.Config())
	}
	if _, err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ccnpLeft(t, dyn); n != 0 {
		t.Errorf("%d objects left", n)
	}
}

// An interrupted point (the run's context cancelled in the middle of the
// creates) removes everything it created, and records no failure.
func TestPreparePolicyInterrupted(t *testing.T) {
	ca, dyn, _ := ciliumAccess(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var creates atomic.Int32
	dyn.PrependReactor("create", "ciliumclusterwidenetworkpolicies", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if len(a.(k8stesting.CreateActionImpl).GetCreateOptions().DryRun) == 0 && creates.Add(1) == 3 {
			cancel()
			return true, nil, context.Canceled
		}
		return false, nil, nil
	})
	_, err := PreparePolicy(ctx, ca, MechCiliumPolicy, 50, 7, Options{Chunk: 10, Wait: time.Second})
	var pf *scenario.PointFailure
	if err == nil || errors.As(err, &pf) {
		t.Errorf("err %v: want the interruption, not a failure", err)
	}
	if n := ccnpLeft(t, dyn); n != 0 {
		t.Errorf("%d objects left after an interruption", n)
	}
}

// The proof's wait grows with the deny set, bounded.
func TestProofWait(t *testing.T) {
	for _, tt := range []struct {
		wait time.Duration
		n    int
		want time.Duration
	}{
		{0, 10, time.Minute},
		{0, 100_000, time.Minute},
		{0, 1_000_000, 10 * time.Minute},
		{30 * time.Second, 10_000, 30 * time.Second},
		{20 * time.Minute, 1_000_000, 20 * time.Minute},
		{0, 10_000_000, MaxProofWait},
	} {
		if got := (Options{Wait: tt.wait}).ProofWait(tt.n); got != tt.want {
			t.Errorf("wait %s, %d rules: %s, want %s", tt.wait, tt.n, got, tt.want)
		}
	}
}

// NetworkPolicies of a million CIDRs at the default chunk: every object
// stays within three quarters of etcd's 1.5 MiB request limit.
func TestDenyEgressPolicySetMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a million CIDRs")
	}
	deny, err := DenySet(7, 1_000_000, netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := DenyEgressPolicySet("cnb-r1-deny", "ns", metav1.LabelSelector{MatchLabels: map[string]string{kube.RunKey: "r1"}}, deny, kube.DefaultPolicyChunk, kube.RunLabels("r1"))
	if err != nil {
		t.Fatal(err)
	}
	most, excepts := 0, 0
	for i := range set.Len() {
		p := set.Policy(i)
		most = max(most, kube.ObjectBytes(p))
		for _, peer := range p.Spec.Egress[0].To {
			excepts += len(peer.IPBlock.Except)
		}
	}
	t.Logf("%d objects, the largest %d bytes", set.Len(), most)
	if most > 1536*1024*3/4 || excepts != len(deny) || set.Len() < 20 {
		t.Errorf("%d objects of at most %d bytes, %d excepts of %d", set.Len(), most, excepts, len(deny))
	}
}

// BenchmarkDenyObjectsMillion builds 100 000 and a million CIDRs' objects
// of each kind one at a time and encodes each as client-go sends it (JSON), as a
// point at 1 000 000 does, and reports this process's peak RSS over it
// (VmHWM after a reset; Linux) beside the bytes encoded: cnibench's memory
// at a million, which the lazy build keeps near the deny set's own size.
//
//	go test -run '^$' -bench DenyObjectsMillion -benchtime 1x ./internal/scenario/egress/incluster/
func BenchmarkDenyObjectsMillion(b *testing.B) {
	denied, allowed := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11")
	labels := kube.ClusterObjectLabels("ns", "r1")
	pod := map[string]string{kube.RunKey: "r1"}
	for _, size := range []int{100_000, 1_000_000} {
		for _, mech := range PolicyMechanisms {
			b.Run(fmt.Sprintf("%s/%d", mech, size), func(b *testing.B) {
				for range b.N {
					debug.FreeOSMemory() // the previous run's heap returned
					rss0, ok := procfs.ResetPeakRSS()
					deny, err := DenySet(7, size, denied, allowed)
					if err == nil {
						deny, err = kube.NormalizeDeny(deny) // as PreparePolicy does
					}
					if err != nil {
						b.Fatal(err)
					}
					var n int
					var each func(i int) any
					switch mech {
					case MechNetworkPolicy:
						set, err := DenyEgressPolicySet("cnb-r1-deny", "ns", metav1.LabelSelector{MatchLabels: pod}, deny, kube.DefaultPolicyChunk, labels)
						if err != nil {
							b.Fatal(err)
						}
						n, each = set.Len(), func(i int) any { return set.Policy(i) }
					default:
						build := kube.CiliumDenySet
						if mech == MechCalicoNetworkSet {
							build = kube.CalicoDenySet
						}
						set, err := build("cnb-r1-deny", pod, deny, kube.DefaultPolicyChunk, labels)
						if err != nil {
							b.Fatal(err)
						}
						n, each = set.Len(), func(i int) any { return set.Object(i).Object }
					}
					deny = nil
					sent := 0
					for i := range n {
						sent += kube.ObjectBytes(each(i))
					}
					b.ReportMetric(float64(n), "objects")
					b.ReportMetric(float64(sent), "bytes_sent")
					if peak, pok := procfs.SelfStatusBytes("VmHWM:"); ok && pok {
						b.ReportMetric(float64(peak), "peak_rss_bytes")
						b.ReportMetric(float64(peak-rss0), "peak_rss_growth_bytes")
					}
				}
			})
		}
	}
}
