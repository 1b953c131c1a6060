package incluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

type podPlace string

func (p podPlace) String() string { return string(p) }

// fakeAccess is a cluster whose CNI enforces NetworkPolicy (or not): its
// agent's watch sees the denied server refuse once a policy exists, and
// answer again once none does.
func fakeAccess(t *testing.T, enforce bool) (*cluster.Access, *fake.Clientset) {
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	// A dry run (the point's admission check) persists nothing, as on an
	// API server.
	cs.PrependReactor("create", "*", dryRunReactor(nil))
	count := func() int {
		l, err := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Error(err)
		}
		return len(l.Items)
	}
	agentFn := watchAgent(count, enforce)
	ca := &cluster.Access{Clientset: cs, Discovery: cs.Discovery(), Namespace: "ns", RunID: "r1",
		Labels: kube.RunLabels("r1"), ClusterLabels: kube.ClusterObjectLabels("ns", "r1"),
		Client: podPlace("client"), ClientLabels: map[string]string{kube.RunKey: "r1", "cnibench.io/pod": "cli-a"},
		Allowed: cluster.ServerPod{Name: "srv-b", IP: "10.0.1.5", Port: 12870},
		Other:   cluster.ServerPod{Name: "srv-a", IP: "10.0.0.7", Port: 12870},
		Agent:   agentFn,
		CNIUsage: func(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
			return map[string]float64{"cni_cpu_millicores": 12, "cni_memory_bytes": 1 << 20}, "", fn(ctx)
		},
	}
	return ca, cs
}

// watchAgent is a fake agent at the client pod whose watch sees the
// denied server refuse once count() > 0 (when the CNI enforces), and
// answer again once it is 0.
func watchAgent(count func() int, enforce bool) func(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return func(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		if pl.String() != "client" || args[0] != "watch" {
			return fmt.Errorf("unexpected agent %v at %v", args, pl)
		}
		want := args[slices.Index(args, "--want")+1]
		fmt.Fprintln(stderr, "ready")
		if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
			return err
		}
		t0 := time.Now()
		w := agent.Watch{Schema: agent.SchemaWatch, Target: args[slices.Index(args, "--target")+1], Want: want, Before: true, ResolutionSeconds: 0.002}
		for time.Since(t0) < 2*time.Second {
			done := (want == agent.WantRefused) == (count() > 0)
			if enforce && done {
				w.Changed, w.AfterSeconds = true, time.Since(t0).Seconds()
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		w.Probes, w.AllowedProbes, w.AllowedAnswered, w.AllowedEndAnswered = 100, 10, 10, true
		if !w.Changed {
			w.Answered = w.Probes
		}
		return json.NewEncoder(stdout).Encode(w)
	}
}

func TestClusterDenySet(t *testing.T) {
	denied, allowed := netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("10.0.1.5")
	for _, n := range []int{1, 10, 1000} {
		set, err := DenySet(1, n, denied, allowed)
		if err != nil || len(set) != n || set[len(set)-1] != netip.MustParsePrefix("10.0.0.7/32") {
			t.Errorf("n=%d: %d CIDRs, last %v, err %v", n, len(set), set[len(set)-1:], err)
		}
	}
	if _, err := DenySet(1, 0, denied, allowed); err == nil {
		t.Error("0 rules accepted")
	}
	if _, err := DenySet(1, 1, denied, denied); err == nil {
		t.Error("an allowed server inside the deny set accepted")
	}
}

// An enforcing CNI: the objects are created, the set-up proven and timed,
// the CNI's usage and the objects sent recorded; Close removes them all and
// times the release.
func TestPrepareClusterPolicyEnforced(t *testing.T) {
	ca, cs := fakeAccess(t, true)
	p, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, 1000, 7, Options{Chunk: 400, Wait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Metrics()
	if m[filter.SetupSeconds] <= 0 || m[filter.SetupReturnedSeconds] <= 0 || m[MetricPolicyObjects] < 3 || m[MetricPolicyBytes] <= 0 || m[MetricCNICPU] != 12 {
		t.Errorf("metrics %v", m)
	}
	if !strings.Contains(p.Config()["filter_load_method"], fmt.Sprintf("%v NetworkPolicy object(s)", m[MetricPolicyObjects])) {
		t.Errorf("config %v", p.Config())
	}
	tg, err := p.(scenario.Targeter).Target(scenario.Cell{Test: "tcp_rr"})
	if err != nil || tg.Client.String() != "client" || !slices.Equal(tg.Args, []string{"--target", "10.0.1.5:12870"}) {
		t.Errorf("target %+v %v", tg, err)
	}
	cm, err := p.Close(context.Background())
	if err != nil || cm[filter.TeardownSeconds] <= 0 {
		t.Errorf("close: %v %v", cm, err)
	}
	l, _ := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{})
	if len(l.Items) != 0 {
		t.Errorf("%d policies left", len(l.Items))
	}
}

// A CNI that ignores NetworkPolicy: the point fails with ErrNotEnforced and
// its evidence, and nothing is left; a point above the bound is too large;
// a CNI's own resources that the cluster does not serve skip the point.
func TestPrepareClusterPolicyRefusals(t *testing.T) {
	ca, cs := fakeAccess(t, false)
	_, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, 10, 7, Options{Wait: time.Second})
	var ne *NotEnforcedError
	if !errors.Is(err, scenario.ErrNotEnforced) || !errors.As(err, &ne) || !strings.Contains(err.Error(), "answered 100 of 100 probes") {
		t.Errorf("not enforced: %v", err)
	}
	l, _ := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{})
	if len(l.Items) != 0 {
		t.Errorf("%d policies left after a point that was not enforced", len(l.Items))
	}
	if _, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, 20_000, 7, Options{}); !errors.Is(err, scenario.ErrTooLarge) || !strings.Contains(err.Error(), "--cluster-scale") {
		t.Errorf("too large: %v", err)
	}
	// --cluster-scale reaches past Calico's default ipset size (Felix's
	// MaxIpsetSize, 1 048 576: seed 004's limit), and no further.
	if ScaleClusterMaxRules <= 1_048_576 {
		t.Errorf("ScaleClusterMaxRules %d: a sweep cannot pass Calico's ipset size of 1 048 576", ScaleClusterMaxRules)
	}
	if _, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, ScaleClusterMaxRules+1, 7, Options{MaxRules: ScaleClusterMaxRules}); !errors.Is(err, scenario.ErrTooLarge) {
		t.Errorf("above --cluster-scale's bound: %v", err)
	}
	for _, m := range []string{MechCiliumPolicy, MechCalicoNetworkSet} {
		ca.Dynamic = nil
		if _, err := PreparePolicy(context.Background(), ca, m, 10, 7, Options{}); !errors.Is(err, backend.ErrNotSupported) {
			t.Errorf("%s without a dynamic client: %v", m, err)
		}
	}
}

// dryRunReactor answers dry-run creates without persisting them: with
// refuse if not nil (the cluster's admission), else admitting them.
func dryRunReactor(refuse error) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		c, ok := a.(k8stesting.CreateActionImpl)
		if !ok || len(c.GetCreateOptions().DryRun) == 0 {
			return false, nil, nil
		}
		if refuse != nil {
			return true, nil, refuse
		}
		return true, c.GetObject(), nil
	}
}

// A cluster whose admission refuses the mechanism's objects skips the
// point (cluster.ErrRefused, a backend.ErrNotSupported) with the
// refusal and its fix, before any object is created or the watch starts:
// a ValidatingAdmissionPolicy on NetworkPolicies, a webhook on Cilium's
// cluster-wide policies (created through the dynamic client).
func TestPrepareClusterPolicyAdmission(t *testing.T) {
	watched := 0
	t.Run("networkpolicy", func(t *testing.T) {
		ca, cs := fakeAccess(t, true)
		cs.PrependReactor("create", "networkpolicies", dryRunReactor(apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, "x",
			errors.New("ValidatingAdmissionPolicy 'no-ipblocks' with binding 'all' denied request: ipBlock rules are not allowed"))))
		agentFn := ca.Agent
		ca.Agent = func(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			watched++
			return agentFn(ctx, pl, args, stdin, stdout, stderr)
		}
		_, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, 10, 7, Options{Wait: time.Second})
		r := scenario.Point{Skip: err}.SkipReason()
		if !errors.Is(err, cluster.ErrRefused) || !errors.Is(err, backend.ErrNotSupported) {
			t.Fatalf("err %v: not ErrRefused", err)
		}
		for _, want := range []string{"skipped: networkpolicy with 10 rules: refused by this cluster: NetworkPolicy cnb-r1-deny", "ValidatingAdmissionPolicy no-ipblocks", "ipBlock rules are not allowed",
			"fix: ask the cluster's administrator to exclude namespace ns from its binding all"} {
			if !strings.Contains(r, want) {
				t.Errorf("recorded %q, lacks %q", r, want)
			}
		}
		l, _ := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{})
		if len(l.Items) != 0 || watched != 0 {
			t.Errorf("a refused point left %d policies and started %d watches", len(l.Items), watched)
		}
	})
	t.Run("cilium-policy", func(t *testing.T) {
		ca, cs := fakeAccess(t, true)
		cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "cilium.io/v2",
			APIResources: []metav1.APIResource{{Name: "ciliumnetworkpolicies"}, {Name: "ciliumclusterwidenetworkpolicies"}}}}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			kube.CiliumClusterwidePolicies: "CiliumClusterwideNetworkPolicyList"})
		dyn.PrependReactor("create", "*", dryRunReactor(apierrors.NewForbidden(schema.GroupResource{Group: "cilium.io", Resource: "ciliumclusterwidenetworkpolicies"}, "x",
			errors.New(`admission webhook "policy.kyverno.svc" denied the request: cluster-wide policies are reserved to the platform team`))))
		ca.Dynamic = dyn
		_, err := PreparePolicy(context.Background(), ca, MechCiliumPolicy, 10, 7, Options{Wait: time.Second})
		r := scenario.Point{Skip: err}.SkipReason()
		if !errors.Is(err, cluster.ErrRefused) {
			t.Fatalf("err %v: not ErrRefused", err)
		}
		for _, want := range []string{"refused by this cluster: CiliumClusterwideNetworkPolicy ", `webhook "policy.kyverno.svc"`, "reserved to the platform team",
			"exempt the run's cluster-scoped CiliumClusterwideNetworkPolicy objects"} {
			if !strings.Contains(r, want) {
				t.Errorf("recorded %q, lacks %q", r, want)
			}
		}
		l, err := dyn.Resource(kube.CiliumClusterwidePolicies).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(l.Items) != 0 {
			t.Errorf("a refused point left %v (%v)", l, err)
		}
	})
}

// Servers outside the cluster: the deny covers the denied one (the last
// CIDR of the policy), the proof watches it and the allowed one, the
// cells run against the allowed one, and the config says so; the run's
// server pods are not used.
func TestPrepareClusterPolicyOutside(t *testing.T) {
	ca, cs := fakeAccess(t, true)
	var watched []string
	agentFn := ca.Agent
	ca.Agent = func(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		watched = append(watched, args[slices.Index(args, "--target")+1])
		if i := slices.Index(args, "--allowed"); i >= 0 {
			watched = append(watched, "allowed "+args[i+1])
		}
		return agentFn(ctx, pl, args, stdin, stdout, stderr)
	}
	denied, allowed, err := ParseOutside("198.18.0.10:7000", "198.18.0.11:7001")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, 10, 7, Options{Wait: 3 * time.Second, Denied: denied, Allowed: allowed})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"198.18.0.10:7000", "allowed 198.18.0.11:7001"}; !slices.Equal(watched, want) {
		t.Errorf("watched %q, want %q", watched, want)
	}
	l, err := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("%d policies, %v", len(l.Items), err)
	}
	var except []string
	for _, peer := range l.Items[0].Spec.Egress[0].To {
		except = append(except, peer.IPBlock.Except...)
	}
	if !slices.Contains(except, "198.18.0.10/32") || slices.Contains(except, "10.0.0.7/32") {
		t.Errorf("deny set %v: want the outside server 198.18.0.10/32, not the pod's 10.0.0.7/32", except)
	}
	if c := p.Config(); c["filter_denied_addr"] != "198.18.0.10 (outside the cluster)" || c["filter_allowed_addr"] != "198.18.0.11 (outside the cluster)" {
		t.Errorf("config %v", c)
	}
	tg, err := p.(scenario.Targeter).Target(scenario.Cell{Test: "tcp_rr"})
	if err != nil || !slices.Equal(tg.Args, []string{"--target", "198.18.0.11:7001"}) {
		t.Errorf("target %+v %v", tg, err)
	}
	if _, err := p.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if ca.Other.Name != "srv-a" || ca.Allowed.Name != "srv-b" {
		t.Errorf("the run's Access was changed: %+v %+v", ca.Other, ca.Allowed)
	}
}

func TestParseOutside(t *testing.T) {
	for _, tt := range []struct {
		denied, allowed, err string
	}{
		{"", "", ""},
		{"198.18.0.10:7000", "198.18.0.11:7000", ""},
		{"[2001:db8::1]:7000", "[2001:db8::2]:7000", ""},
		{"198.18.0.10:7000", "", "give both"},
		{"", "198.18.0.11:7000", "give both"},
		{"198.18.0.10", "198.18.0.11:7000", "--egress-denied \"198.18.0.10\": want IP:PORT"},
		{"198.18.0.10:7000", "host:7000", "--egress-allowed \"host:7000\": want IP:PORT"},
		{"198.18.0.10:0", "198.18.0.11:7000", "--egress-denied \"198.18.0.10:0\""},
		{"0.0.0.0:7000", "198.18.0.11:7000", "--egress-denied \"0.0.0.0:7000\""},
		{"198.18.0.10:7000", "[2001:db8::2]:7000", "one address family"},
		{"198.18.0.10:7000", "198.18.0.10:7001", "both are 198.18.0.10"},
	} {
		d, a, err := ParseOutside(tt.denied, tt.allowed)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q %q: %v", tt.denied, tt.allowed, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q %q: err %v, want %q", tt.denied, tt.allowed, err, tt.err)
		case tt.err == "" && tt.denied != "" && (d.String() != tt.denied || a.String() != tt.allowed):
			t.Errorf("%q %q: parsed %s %s", tt.denied, tt.allowed, d, a)
		}
	}
}

// The allowed server missed while the deny went in: answered again by the
// end of the proof it is a passing cut, measured and recorded; unanswered
// at the end it may be cut for good: the point fails, its objects removed.
func TestPrepareClusterPolicyAllowedCut(t *testing.T) {
	for _, tt := range []struct {
		name      string
		endAnswer bool
		err       string
	}{
		{"passing", true, ""},
		{"lasting", false, "also cut the allowed server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ca, cs := fakeAccess(t, true)
			agentFn := ca.Agent
			ca.Agent = func(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
				var buf strings.Builder
				if err := agentFn(ctx, pl, args, stdin, &buf, stderr); err != nil {
					return err
				}
				var w agent.Watch
				if err := json.Unmarshal([]byte(buf.String()), &w); err != nil {
					return err
				}
				if w.Want == agent.WantRefused {
					// The misses come after the deny took effect (as on
					// Cilium): what counts is the end.
					w.AllowedAnswered, w.AllowedLastMissSeconds, w.AllowedEndAnswered = w.AllowedProbes-3, w.AfterSeconds+0.5, tt.endAnswer
				}
				return json.NewEncoder(stdout).Encode(w)
			}
			p, err := PreparePolicy(context.Background(), ca, MechNetworkPolicy, 10, 7, Options{Wait: 3 * time.Second})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if l, _ := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
					t.Errorf("%d policies left", len(l.Items))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			if got := p.Metrics()[filter.SetupAllowedLost]; got != 3 {
				t.Errorf("%s = %v, want 3", filter.SetupAllowedLost, got)
			}
			if c := p.Config()["filter_allowed_cut"]; !strings.HasPrefix(c, "3 of 10 probes of the allowed server unanswered") {
				t.Errorf("filter_allowed_cut %q", c)
			}
		})
	}
}
