//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/pkg/result"
)

// What the managed-cluster test puts on the local cluster, as a managed
// cluster has it: zones, a tainted benchmark node, a namespace that
// enforces PodSecurity restricted.
const (
	zoneKey         = "topology.kubernetes.io/zone"
	benchTaintKey   = "cnibench.io/dedicated"
	benchTaintValue = "bench"
	restrictedNS    = "cnibench-restricted"
)

// managedSetup labels every node with zone, taints
// the last node NoSchedule and creates restrictedNS enforcing PodSecurity
// restricted; t.Cleanup undoes all of it and checks that it is undone.
func (e *env) managedSetup(t *testing.T, zone string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := e.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if len(names) < 2 {
		t.Fatalf("need two nodes, have %v", names)
	}
	tainted := names[len(names)-1]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, n := range names {
			e.patchNode(t, ctx, n, nil, false)
		}
		if err := e.cs.CoreV1().Namespaces().Delete(ctx, restrictedNS, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", restrictedNS, err)
		}
		err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := e.cs.CoreV1().Namespaces().Get(ctx, restrictedNS, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace %s still there after clean-up: %v", restrictedNS, err)
		}
		nodes, err := e.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			if _, ok := n.Labels[zoneKey]; ok {
				t.Errorf("node %s keeps its zone label", n.Name)
			}
			for _, tt := range n.Spec.Taints {
				if tt.Key == benchTaintKey {
					t.Errorf("node %s keeps its taint", n.Name)
				}
			}
		}
	})
	for _, n := range names {
		e.patchNode(t, ctx, n, map[string]string{zoneKey: zone}, n == tainted)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restrictedNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return names
}

// patchNode sets (labels not nil) or removes the zone label, and adds or
// removes the benchmark taint.
func (e *env) patchNode(t *testing.T, ctx context.Context, name string, labels map[string]string, taint bool) {
	t.Helper()
	n, err := e.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var taints []corev1.Taint
	for _, tt := range n.Spec.Taints {
		if tt.Key != benchTaintKey {
			taints = append(taints, tt)
		}
	}
	if taint {
		taints = append(taints, corev1.Taint{Key: benchTaintKey, Value: benchTaintValue, Effect: corev1.TaintEffectNoSchedule})
	}
	meta := map[string]any{zoneKey: nil}
	if labels != nil {
		meta = map[string]any{}
		for k, v := range labels {
			meta[k] = v
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": meta}, "spec": map[string]any{"taints": taints}})
	if _, err := e.cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch node %s: %v", name, err)
	}
}

// managedArgs are a brief suite as a first-time user runs it on a managed
// cluster: an existing restricted namespace, a tainted node.
func (e *env) managedArgs(out string, extra ...string) []string {
	a := []string{"suite", "--backend", "kubernetes", "--kubeconfig", e.kubeconfig, "--namespace", e.ns,
		"--image", e.image, "--image-pull-policy", "Never",
		"--tests", "tcp_stream,tcp_rr", "--flows", "1", "--repeat", "2",
		"--duration", "0.5s", "--warmup", "0.1s", "--seed", "4243", "--out", out}
	if e.cniConf != "" {
		a = append(a, "--cni-conf-dir", e.cniConf)
	}
	return append(a, extra...)
}

// TestManagedClusterOnCluster runs the suite as on a managed cluster: a
// namespace enforcing PodSecurity restricted (the pod-network paths run,
// the privileged host pods are refused and what needs them is skipped
// with the reason), a NoSchedule-tainted node (unusable without
// --tolerations), zones (same-zone placement; cross-zone refused when
// there is one zone), two pairs at once; the results name the
// Kubernetes version, the nodes' kernel, runtime and zone, and the
// cluster; nothing is left behind.
func TestManagedClusterOnCluster(t *testing.T) {
	e := setup(t)
	e.assertClean(t, "before the run")
	e.managedSetup(t, "zone-a")
	toleration := benchTaintKey + "=" + benchTaintValue + ":NoSchedule"

	// 1. The tainted node without --tolerations: a one-line error that
	// names the taint and the flag.
	out := filepath.Join(e.out, "managed-untolerated")
	_, se, code := run(t, e.bin, e.managedArgs(out, "--namespace", restrictedNS)...)
	if code == 0 || !strings.Contains(se, benchTaintKey) || !strings.Contains(se, "--tolerations") {
		t.Errorf("tainted node without --tolerations: exit %d, stderr %q; want a failure naming the taint and --tolerations", code, se)
	}
	e.assertClean(t, "after the refused run")

	// 2. Cross-zone on a one-zone cluster: refused in one line.
	_, se, code = run(t, e.bin, e.managedArgs(filepath.Join(e.out, "managed-cross-zone"), "--namespace", restrictedNS,
		"--tolerations", toleration, "--placement", "cross-zone")...)
	if code == 0 || !strings.Contains(se, "--placement") {
		t.Errorf("cross-zone on one zone: exit %d, stderr %q; want a failure naming --placement", code, se)
	}
	e.assertClean(t, "after the cross-zone refusal")

	// 3. The run: restricted namespace, toleration, same zone, two pairs,
	// and a LoadBalancer service: without the harness's address controller
	// the local cluster never gives it an address, and its path is skipped
	// with the reason, after a bounded wait; with it, the path is measured.
	out = filepath.Join(e.out, "managed")
	start := time.Now()
	so, se, code := run(t, e.bin, e.managedArgs(out, "--namespace", restrictedNS, "--tolerations", toleration,
		"--placement", "same-zone", "--pairs", "2", "--checks", "cni,mtu,network_policy",
		"--load-balancer", "--load-balancer-timeout", lbTimeout.String())...)
	t.Logf("suite (%v) stdout:\n%s\nstderr:\n%s", time.Since(start).Round(time.Second), so, se)
	if code != 0 {
		t.Fatalf("suite in a restricted namespace: exit %d", code)
	}
	set, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	x := e.expected(t)
	// The CNI's datapath: without the host pods the CNI configuration is
	// not read, so a CNI known by it alone (bridge) is cni-unknown.
	cniDP := ""
	for _, d := range set.Datapaths {
		if d.Name != "baseline" {
			cniDP = d.Name
		}
	}
	if want := "cni-" + x.cni; cniDP != want && (x.cni != "bridge" || cniDP != "cni-unknown") {
		t.Errorf("datapath %q, want %s", cniDP, want)
	}
	for _, p := range []string{"same-node", "cross-node", "pod-to-service", "cross-node-pairs"} {
		for _, test := range []string{"tcp_stream", "tcp_rr"} {
			runs := set.Find(map[string]string{"datapath": cniDP, "path": p, "test": test})
			if len(runs) != 1 {
				t.Errorf("%s %s: %d runs, want 1", p, test, len(runs))
				continue
			}
			r := runs[0]
			metric := result.TransPerSec
			if test == "tcp_stream" {
				metric = result.ThroughputBitsPerSec
			}
			// This run keeps the interference rule (the other tests
			// turn it off): on a busy host, as CI's with a CNI building
			// beside it, a cell's busy repeats are measured again once
			// at the end, so it has 2 repeats and at most 2 re-runs, and
			// its summary is of the repeats the rule uses.
			reruns := 0
			for _, rep := range r.Repeats {
				if rep.Rerun {
					reruns++
				}
			}
			used := len(result.UsedRepeats(r.Repeats))
			if s, ok := r.Summary[metric]; !ok || len(r.Repeats)-reruns != 2 || reruns > 2 || s.N != used || s.Median <= 0 {
				t.Errorf("%s %s: %d repeats (%d re-run), %s summary %+v of %d used (errors %v)", p, test, len(r.Repeats), reruns, metric, s, used, repeatErrors(r))
			}
			e.assertIdentity(t, p+" "+test, r, x)
			if p == "cross-node-pairs" {
				for _, rep := range r.Repeats {
					if rep.Metrics[result.Pairs] != 2 {
						t.Errorf("pairs: repeat %d has pairs=%v, want 2 (metrics %v)", rep.Index, rep.Metrics[result.Pairs], rep.Metrics)
					}
					if _, ok := rep.Metrics[result.PairSpreadPct]; !ok {
						t.Errorf("pairs: repeat %d has no spread", rep.Index)
					}
				}
				if !strings.Contains(r.Config["pair_nodes"], ",") {
					t.Errorf("pairs: pair_nodes %q", r.Config["pair_nodes"])
				}
			}
		}
	}
	// The baseline needs privileged hostNetwork pods, which restricted
	// refuses: skipped, with the reason.
	if runs := set.Find(map[string]string{"datapath": "baseline"}); len(runs) != 0 {
		t.Errorf("baseline ran in a restricted namespace (%d runs)", len(runs))
	}
	if !strings.Contains(so+se+strings.Join(set.Warnings, "\n")+skippedText(set), "PodSecurity") {
		t.Errorf("no word of PodSecurity refusing the host pods in the output or the results")
	}
	if e.lbPool == "" {
		assertLBSkipped(t, set, cniDP)
	} else if runs := set.Find(map[string]string{"path": "pod-to-loadbalancer"}); len(runs) != 2 {
		t.Errorf("pod-to-loadbalancer measured %d times with the harness's address controller, want once per test (2); skipped: %v", len(runs), set.Skipped)
	}
	e.assertClean(t, "after the run")
}

// lbTimeout bounds the managed run's wait for a LoadBalancer address.
const lbTimeout = 15 * time.Second

// lbWaitedRE reads how long the run waited for the address, from the skip
// reason.
var lbWaitedRE = regexp.MustCompile(`no address within ` + regexp.QuoteMeta(lbTimeout.String()) + ` \(waited ([0-9.]+)s`)

// assertLBSkipped: every cell of the pod-to-loadbalancer path is recorded
// skipped, none measured, with the reason; the wait was bounded by
// --load-balancer-timeout.
func assertLBSkipped(t *testing.T, set *result.Set, cniDP string) {
	t.Helper()
	if runs := set.Find(map[string]string{"path": "pod-to-loadbalancer"}); len(runs) != 0 {
		t.Errorf("pod-to-loadbalancer measured %d times on a cluster without a load-balancer controller", len(runs))
	}
	n := 0
	for _, s := range set.Skipped {
		if s.Labels["path"] != "pod-to-loadbalancer" {
			continue
		}
		n++
		if s.Labels["datapath"] != cniDP {
			t.Errorf("skip on datapath %q, want %s", s.Labels["datapath"], cniDP)
		}
		m := lbWaitedRE.FindStringSubmatch(s.Reason)
		if m == nil {
			t.Errorf("pod-to-loadbalancer skip reason %q: want %q", s.Reason, lbWaitedRE)
			continue
		}
		if w, err := strconv.ParseFloat(m[1], 64); err != nil || w < lbTimeout.Seconds()-1 || w > lbTimeout.Seconds()+5 {
			t.Errorf("waited %ss for the address, want about %v (the bound)", m[1], lbTimeout)
		}
		t.Logf("pod-to-loadbalancer %s: %s", s.Labels["test"], s.Reason)
	}
	if n != 2 {
		t.Errorf("%d pod-to-loadbalancer skips, want one per test (2)", n)
	}
}

// assertIdentity checks a managed run's identity labels against what the
// API says of the cluster and its nodes: the Kubernetes version, each
// node's kernel, OS image, runtime and instance type (absent when the
// nodes have no instance-type label, as on the local cluster), the zones,
// the CNI and its version (on a CNI that has one), and the pods'
// Guaranteed QoS.
func (e *env) assertIdentity(t *testing.T, what string, r result.Run, x expect) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := e.cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	l := r.Labels
	want := map[string]string{"k8s_version": v.GitVersion, "client_zone": "zone-a", "server_zone": "zone-a", "cni": x.cni}
	facts := map[string][2]string{}
	for i, n := range []string{l["client_node"], l["server_node"]} {
		node, err := e.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: node %q: %v", what, n, err)
		}
		info := node.Status.NodeInfo
		it := node.Labels[corev1.LabelInstanceTypeStable]
		if it == "" {
			it = node.Labels[corev1.LabelInstanceType]
		}
		for k, val := range map[string]string{"node_kernel": info.KernelVersion, "node_os_image": info.OSImage,
			"node_runtime": info.ContainerRuntimeVersion, "node_instance_type": it} {
			f := facts[k]
			f[i] = val
			facts[k] = f
		}
	}
	for k, f := range facts {
		switch {
		case f[0] == "" && f[1] == "":
			want[k] = "" // absent
		case f[0] == f[1]:
			want[k] = f[0]
		default:
			want[k] = orUnknown(f[0]) + " / " + orUnknown(f[1])
		}
	}
	for _, k := range []string{"node_kernel", "node_os_image", "node_runtime"} {
		if want[k] == "" {
			t.Errorf("%s: the API shows no %s for the nodes", what, k)
		}
	}
	if x.cni == "bridge" {
		// Known by its CNI configuration only, which the host pods read:
		// refused here.
		delete(want, "cni")
	}
	for k, w := range want {
		got, ok := l[k]
		if got != w || (w == "" && ok) {
			t.Errorf("%s: %s=%q (present %v), want %q", what, k, got, ok, w)
		}
	}
	if x.cni != "bridge" {
		if l["cni_version"] == "" {
			t.Errorf("%s: no cni_version on %s", what, x.cni)
		}
		if !x.modeMatches(l["cni_mode"]) {
			t.Errorf("%s: cni_mode %q, want %q", what, l["cni_mode"], x.mode)
		}
	}
	for _, k := range []string{"cluster", "kube_proxy_mode"} {
		if l[k] == "" {
			t.Errorf("%s: no %s label", what, k)
		}
	}
	if q := r.Config["pod_qos"]; q != string(corev1.PodQOSGuaranteed) {
		t.Errorf("%s: pod_qos %q, want Guaranteed", what, q)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// skippedText is every skip reason a set records.
func skippedText(set *result.Set) string {
	var b strings.Builder
	for _, s := range set.Skipped {
		b.WriteString(s.Reason + "\n")
	}
	for _, d := range set.Datapaths {
		b.WriteString(d.Skipped + "\n")
	}
	return b.String()
}
