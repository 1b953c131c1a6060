package cluster

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/nodes"
	"github.com/cnibench/cnibench/pkg/result"
)

// The walls of a managed cluster: admission, placement, pairs, resources,
// a LoadBalancer.

const psRestricted = `violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true), privileged (container "cnibench" must not set securityContext.privileged=true), hostPath volumes (volumes "host-0", "host-1")`

// TestUpRestrictedNamespace: the namespace's admission refuses the
// privileged host pods: the run goes on without them, the baseline is
// skipped with the reason and the fix, and nothing is left behind.
func TestUpRestrictedNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	fc.enforce = true
	fc.admission = map[string]string{podHostA: psRestricted, podHostB: psRestricted}
	// Two-CPU nodes: with the host pods, n1 would hold three pods (500m
	// each); without them it holds two (800m each).
	for _, n := range []string{"n1", "n2"} {
		node, err := fc.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		if _, err := fc.cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b := fc.backend(nil)
	d := up(t, ctx, b)
	// The fake has no kube-proxy pod, and the node cannot be asked.
	if got := d.Labels()["kube_proxy_mode"]; got != "unknown: no kube-proxy pod, node not asked" {
		t.Errorf("kube_proxy_mode %q", got)
	}
	if got := d.resConfig["pod_cpu"]; got != "800m" {
		t.Errorf("pod_cpu %q, want 800m: sized to the pods that run", got)
	}
	cli, err := fc.pod(ctx, DefaultNamespace, d.name(podCliA))
	if err != nil || cli.Spec.Containers[0].Resources.Limits.Cpu().String() != "800m" {
		t.Errorf("cli-a's resources %v (%v)", cli.Spec.Containers[0].Resources, err)
	}
	if !strings.Contains(d.noHost, "PodSecurity") || !strings.Contains(d.noHost, "pod-security.kubernetes.io/enforce=privileged") {
		t.Errorf("noHost %q: want the refusal and the fix", d.noHost)
	}
	dps := d.Datapaths()
	if dps[0].Name != DatapathBaseline || dps[0].Skipped != d.noHost || d.Paths(DatapathBaseline) != nil {
		t.Errorf("baseline %+v, paths %v: want it skipped with the reason", dps[0], d.Paths(DatapathBaseline))
	}
	if len(d.Paths(d.cniName())) == 0 {
		t.Errorf("no pod-network paths")
	}
	for _, o := range fc.inventory(t, DefaultNamespace) {
		if strings.Contains(o, podHostA) || strings.Contains(o, podHostB) {
			t.Errorf("host pod created: %s", o)
		}
	}
	// The checks that read the nodes are skipped with the reason; the
	// others run.
	for _, f := range d.Findings(ctx, measured) {
		switch f.Check {
		case "mtu", "encryption", "cni_footprint":
			if f.Verdict != "skipped" || !strings.Contains(f.Summary, "PodSecurity") {
				t.Errorf("%s: %s %q, want skipped with the reason", f.Check, f.Verdict, f.Summary)
			}
		default:
			if f.Verdict == "skipped" {
				t.Errorf("%s skipped: %s", f.Check, f.Summary)
			}
		}
	}
	// The path counters are the pods' only.
	if _, warns := d.Evidence(d.cniName()).End(); len(warns) > 0 {
		t.Errorf("evidence warnings %q", warns)
	}
	if err := d.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if inv := fc.inventory(t, DefaultNamespace); len(inv) > 0 {
		t.Errorf("left behind: %v", inv)
	}
}

// TestUpRefusedPodNetworkPod: a refused pod-network pod ends Up in one
// line naming the pod and the rule, before any pod was created.
func TestUpRefusedPodNetworkPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	fc.admission = map[string]string{podCliA: `violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "cnibench" must set securityContext.runAsNonRoot=true)`}
	b := fc.backend(nil)
	dep, err := b.Up(ctx, backend.Spec{Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "refuses pod cli-a") || !strings.Contains(err.Error(), "runAsNonRoot") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Up error %v: want one line naming cli-a and the rule", err)
	}
	for _, o := range fc.inventory(t, DefaultNamespace) {
		if strings.HasPrefix(o, "pod ") || strings.HasPrefix(o, "secret ") {
			t.Errorf("created before the refusal was known: %s", o)
		}
	}
	if err := dep.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if inv := fc.inventory(t, DefaultNamespace); len(inv) > 0 {
		t.Errorf("left behind: %v", inv)
	}
}

// TestUpPairs: --pairs 2 on two nodes: the second pair runs the other way,
// with its own client and server pods; one path runs both at once.
func TestUpPairs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	b := fc.backend(func(o *Options) { o.Pairs = 2 })
	d := up(t, ctx, b)
	var pp *backend.Path
	for _, p := range d.Paths(d.cniName()) {
		if p.Kind == PathCrossNodePairs {
			pp = &p
		}
	}
	if pp == nil {
		t.Fatalf("no %s path", PathCrossNodePairs)
	}
	place := pp.Client.(pairsPlace)
	if len(place.pairs) != 2 || place.pairs[0].name != "n1→n2" || place.pairs[1].name != "n2→n1" {
		t.Fatalf("pairs %+v", place.pairs)
	}
	if pp.Labels["pairs"] != "2" {
		t.Errorf("labels %v", pp.Labels)
	}
	cli, _ := fc.pod(ctx, DefaultNamespace, d.name(pairPod("cli", 2)))
	srv, _ := fc.pod(ctx, DefaultNamespace, d.name(pairPod("srv", 2)))
	if cli == nil || srv == nil || cli.Spec.NodeName != "n2" || srv.Spec.NodeName != "n1" {
		t.Fatalf("pair 2's pods: client %v server %v", cli, srv)
	}
	if place.pairs[1].target != net.JoinHostPort(srv.Status.PodIP, strconv.Itoa(engine.DefaultPort)) {
		t.Errorf("pair 2's target %q, server at %s", place.pairs[1].target, srv.Status.PodIP)
	}
}

func TestResourcesAuto(t *testing.T) {
	node := func(name, cpu string) *corev1.Node {
		n := testNode(name, "192.0.2.1")
		if cpu != "" {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		return n
	}
	for _, c := range []struct {
		name    string
		mode    ResourcesMode
		cpu     string // each node's allocatable
		podsOn  map[string]int
		wantCPU string
		wantQoS corev1.PodQOSClass
		wantErr string
	}{
		{"two-cpu nodes, three pods on one", ResourcesAuto, "2", map[string]int{"a": 3, "b": 2}, "500m", corev1.PodQOSGuaranteed, ""},
		{"big nodes: capped", ResourcesAuto, "64", map[string]int{"a": 3, "b": 2}, "2", corev1.PodQOSGuaranteed, ""},
		{"unknown allocatable", ResourcesAuto, "", map[string]int{"a": 3, "b": 2}, "2", corev1.PodQOSGuaranteed, ""},
		{"too small", ResourcesAuto, "500m", map[string]int{"a": 3, "b": 2}, "", "", "--pod-resources auto: the nodes are too small"},
		{"none", ResourcesNone, "2", map[string]int{"a": 3}, "", corev1.PodQOSBestEffort, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &Deployment{b: &Backend{o: Options{ResourcesMode: c.mode}},
				pairs: []nodes.Pair{{Client: node("a", c.cpu), Server: node("b", c.cpu)}}}
			r, conf, err := d.resources(c.podsOn)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if conf["pod_qos"] != string(c.wantQoS) {
				t.Errorf("qos %q, want %q", conf["pod_qos"], c.wantQoS)
			}
			if c.wantCPU != "" {
				if got := r.Limits.Cpu().String(); got != c.wantCPU || r.Requests.Cpu().String() != c.wantCPU || conf["pod_cpu"] != c.wantCPU {
					t.Errorf("cpu limit %s request %s config %q, want %s", got, r.Requests.Cpu(), conf["pod_cpu"], c.wantCPU)
				}
			}
		})
	}
}

// TestLoadBalancer: --load-balancer on a cluster that gives the service an
// address measures it; on one that does not, the path is skipped with
// the reason. With --load-balancer-external the same address is also the
// external path's, its client this machine.
func TestLoadBalancer(t *testing.T) {
	defer func(d time.Duration) { lbPollInterval = d }(lbPollInterval)
	lbPollInterval = 10 * time.Millisecond
	for _, assign := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		fc := newFakeCluster(t)
		if assign {
			fc.cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
				svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
				if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
					svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
				}
				return false, nil, nil
			})
		}
		b := fc.backend(func(o *Options) { o.LoadBalancer, o.LBExternal, o.LBTimeout = true, true, 100*time.Millisecond })
		d := up(t, ctx, b)
		var lb, ext *backend.Path
		for _, p := range d.Paths(d.cniName()) {
			switch p.Kind {
			case PathPodToLoadBalancer:
				lb = &p
			case PathExternalToLoadBalancer:
				ext = &p
			}
		}
		if lb == nil || ext == nil {
			t.Fatalf("assign=%v: paths %s %v, %s %v", assign, PathPodToLoadBalancer, lb != nil, PathExternalToLoadBalancer, ext != nil)
		}
		if _, ok := ext.Client.(localPlace); !ok || ext.Labels["client_node"] != "external" || ext.Labels["server_node"] != lb.Labels["server_node"] ||
			ext.Labels["ip_family"] != "ipv4" || ext.Labels["mtu"] != "" {
			t.Errorf("assign=%v: external path's client %v, labels %v", assign, ext.Client, ext.Labels)
		}
		ea, ewhy := ext.TargetArgs("tcp_rr")
		la, lwhy := lb.TargetArgs("tcp_rr")
		if strings.Join(ea, " ") != strings.Join(la, " ") || ewhy != lwhy {
			t.Errorf("assign=%v: external path's args %v (%q), the pod path's %v (%q)", assign, ea, ewhy, la, lwhy)
		}
		if f := lb.Labels["ip_family"]; f != "ipv4" {
			t.Errorf("assign=%v: ip_family label %q, want the service's family, ipv4", assign, f)
		}
		args, why := lb.TargetArgs("tcp_rr")
		switch {
		case assign && (why != "" || strings.Join(args, " ") != "--service 203.0.113.7:12872"):
			t.Errorf("assigned: args %v why %q", args, why)
		case !assign && (args != nil || !strings.Contains(why, "no address within 100ms")):
			t.Errorf("not assigned: args %v why %q", args, why)
		}
	}
}

// TestRunPairsOnCluster: a client run at the pairs path runs in both
// pairs' client pods and returns their merged result.
func TestRunPairsOnCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	d := up(t, ctx, fc.backend(func(o *Options) { o.Pairs = 2 }))
	for _, p := range d.Paths(d.cniName()) {
		if p.Kind != PathCrossNodePairs {
			continue
		}
		args, _ := p.TargetArgs("tcp_rr")
		out, se, err := d.Run(ctx, p.Client, append(append([]string{"run"}, args...), "--test", "tcp_rr", "--format", "json"))
		if err != nil {
			t.Fatalf("run: %v (%s)", err, se)
		}
		var r result.Result
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		if r.Config["pairs"] != "2" || len(r.Repeats) == 0 || r.Repeats[0].Metrics[result.Pairs] != 2 {
			t.Fatalf("merged result config %v repeats %+v", r.Config, r.Repeats)
		}
		if n := len(fc.callsOf("/cnibench", "run")); n != 2 {
			t.Errorf("%d client runs, want one per pair", n)
		}
		return
	}
	t.Fatal("no pairs path")
}

// TestIPFamilies: --ip-family dual measures every pod path over both
// families (the IPv6 ones named -ipv6) with a RequireDualStack service;
// ipv6 on a single-stack IPv4 cluster fails in one line.
func TestIPFamilies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v6 := map[string]string{"n1": "fd00::1", "n2": "fd00::2"}
	n1, n2 := testNode("n1", n1IP), testNode("n2", n2IP)
	for _, n := range []*corev1.Node{n1, n2} {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: v6[n.Name]})
	}
	dual := func(fc *fakeCluster) {
		// The kubelet's second address (the allocator gives the IPv6 cluster IP).
		fc.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			p.Status.PodIPs = []corev1.PodIP{{IP: podIPs[p.Labels["cnibench.io/pod"]]}, {IP: "fd00:10::" + strconv.Itoa(len(p.Name))}}
			return false, nil, nil
		})
		fc.cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
			svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
			if svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || len(svc.Spec.IPFamilies) != 2 {
				t.Errorf("service %s families %v policy %v, want RequireDualStack", svc.Name, svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy)
			}
			return false, nil, nil
		})
	}
	fc := newFakeCluster(t)
	// Replace the nodes by dual-stack ones.
	for _, n := range []*corev1.Node{n1, n2} {
		if _, err := fc.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dual(fc)
	d := up(t, ctx, fc.backend(func(o *Options) { o.IPFamily = FamilyDual }))
	got := map[string]backend.Path{}
	for _, p := range d.Paths(d.cniName()) {
		got[p.Kind] = p
	}
	for _, k := range []string{PathCrossNode, PathPodToService, PathHairpin, PathPodToNodePort} {
		p4, p6 := got[k], got[k+"-ipv6"]
		if p4.Labels["ip_family"] != FamilyIPv4 || p6.Labels["ip_family"] != FamilyIPv6 {
			t.Errorf("%s: families %q and %q", k, p4.Labels["ip_family"], p6.Labels["ip_family"])
		}
		a6, why := p6.TargetArgs("tcp_rr")
		if why != "" || !strings.Contains(strings.Join(a6, " "), "[fd00:") {
			t.Errorf("%s-ipv6: args %v why %q: want an IPv6 target", k, a6, why)
		}
	}

	// IPv6 on an IPv4-only cluster: one line, naming the flag.
	fc4 := newFakeCluster(t)
	dep, err := fc4.backend(func(o *Options) { o.IPFamily = FamilyIPv6 }).Up(ctx, backend.Spec{Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "--ip-family") || strings.Contains(err.Error(), "\n") {
		t.Errorf("ipv6 on IPv4: %v", err)
	}
	if dep != nil {
		_ = dep.Down(ctx)
	}
}
