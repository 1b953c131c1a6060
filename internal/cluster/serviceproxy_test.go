package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cnibench/cnibench/internal/backend"
)

// upScenario brings a deployment up for a scenario that asks (or not) for
// the service proxy label.
func upScenario(t *testing.T, ctx context.Context, b *Backend, serviceProxy bool) *Deployment {
	t.Helper()
	return upSpec(t, ctx, b, backend.Spec{Token: testToken, MTU: 9000, Scenario: &backend.ScenarioSpec{Name: "services", ServiceProxy: serviceProxy}})
}

// The fake nodes' kube-proxy runs outside pods (it answers its mode, no
// pod shows): the service proxy is kube-proxy-iptables, labelled only for a
// scenario that asks, and kube-proxy's usage is read from the cgroup
// --kube-proxy-cgroup names on each node.
func TestServiceProxyOutsidePods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	b := fc.backend(func(o *Options) {
		o.Checks = []string{"none"}
		o.KubeProxyCgroup = "cnbk8s-{node}/kube-proxy"
		o.APIQPS, o.APIBurst = 400, 800 // New's; NewWithClient keeps the clientset's (unknown here)
	})
	if _, ok := upScenario(t, ctx, b, false).Labels()[LabelServiceProxy]; ok {
		t.Error("service_proxy labelled for a scenario that did not ask for it")
	}
	d := upScenario(t, ctx, b, true)
	if got := d.Labels()[LabelServiceProxy]; got != "kube-proxy-iptables" {
		t.Errorf("label %s = %q, want kube-proxy-iptables (labels %v)", LabelServiceProxy, got, d.Labels())
	}
	a, err := d.ClusterAccess(d.cniName())
	if err != nil {
		t.Fatal(err)
	}
	if a.ServiceProxy != "kube-proxy-iptables" || len(a.ServiceProxyEvidence) == 0 || a.ProxyUsage == nil {
		t.Fatalf("access: %q %q", a.ServiceProxy, a.ServiceProxyEvidence)
	}
	before := len(fc.callsOf("/cnibench", "k8s", "agent", "cgroup"))
	ran := false
	u, why, err := a.ProxyUsage(ctx, func(context.Context) error { ran = true; time.Sleep(50 * time.Millisecond); return nil })
	if err != nil || !ran || why != "" {
		t.Fatalf("ProxyUsage: %v, ran %v, why %q", err, ran, why)
	}
	// 50 mCPU and 20 MiB on each node, as the fake cgroups say.
	if cpu := u[ProxyCPU]; cpu < 99 || cpu > 101 || u[ProxyMemory] != 40<<20 || u[ProxyWindow] < 0.05 {
		t.Errorf("usage %v", u)
	}
	cg := fc.callsOf("/cnibench", "k8s", "agent", "cgroup")[before:]
	got := map[string]string{}
	for _, c := range cg {
		got[c.short] = flag(c.cmd, "--cgroup")
	}
	if len(cg) != 4 || got[podHostA] != "cnbk8s-n1/kube-proxy" || got[podHostB] != "cnbk8s-n2/kube-proxy" {
		t.Errorf("cgroup reads %+v", cg)
	}
}

// kube-proxy as pods (a kubeadm cluster's DaemonSet): read by UID on the
// run's two nodes; a third node's is not the run's.
func TestServiceProxyPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kp := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name), Labels: map[string]string{"k8s-app": "kube-proxy"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.33.0"}}}}
	}
	fc := newFakeCluster(t, testNode("n3", "10.0.0.3"), kp("kube-proxy-a", "n1"), kp("kube-proxy-b", "n2"), kp("kube-proxy-c", "n3"))
	d := upScenario(t, ctx, fc.backend(func(o *Options) { o.Checks = []string{"none"} }), true)
	a, err := d.ClusterAccess(d.cniName())
	if err != nil {
		t.Fatal(err)
	}
	before := len(fc.callsOf("/cnibench", "k8s", "agent", "cgroup"))
	u, why, err := a.ProxyUsage(ctx, func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil })
	if err != nil || why != "" || u[ProxyMemory] != 60<<20 {
		t.Fatalf("ProxyUsage: %v, %q, %v", u, why, err)
	}
	for _, c := range fc.callsOf("/cnibench", "k8s", "agent", "cgroup")[before:] {
		want := map[string]string{podHostA: "uid-kube-proxy-a", podHostB: "uid-kube-proxy-b"}[c.short]
		if flag(c.cmd, "--pod-uid") != want || flag(c.cmd, "--cgroup") != "" {
			t.Errorf("%s read %q, want pod %s", c.short, c.cmd, want)
		}
	}
}

// Without host pods there is nothing to read kube-proxy's cgroups with:
// the function runs, no usage, the reason.
func TestServiceProxyNoHostPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	d := upScenario(t, ctx, fc.backend(func(o *Options) { o.Checks = []string{"none"}; o.NoHostPods = true }), true)
	a, err := d.ClusterAccess(d.cniName())
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	u, why, err := a.ProxyUsage(ctx, func(context.Context) error { ran = true; return nil })
	if u != nil || err != nil || !ran || !strings.Contains(why, "no host pods") {
		t.Errorf("ProxyUsage without host pods: %v, %q, %v, ran %v", u, why, err, ran)
	}
	// The API shows no kube-proxy and no node was asked: unknown.
	if got := d.Labels()[LabelServiceProxy]; got != "unknown" {
		t.Errorf("service proxy %q, want unknown", got)
	}
}

func TestValidateServiceScaleOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{APIQPS: -1}, "--api-qps"},
		{Options{APIQPS: 0.5}, "--api-qps"},
		{Options{APIQPS: 1e6}, "--api-qps"},
		{Options{APIBurst: -3}, "--api-burst"},
		{Options{KubeProxyCgroup: "../x"}, "--kube-proxy-cgroup"},
		{Options{KubeProxyCgroup: "/abs/{node}"}, "--kube-proxy-cgroup"},
		{Options{APIQPS: 500, APIBurst: 1000, KubeProxyCgroup: "cnbk8s-{node}/kube-proxy"}, ""},
	} {
		tc.o.HostPort = DefaultHostPort
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
