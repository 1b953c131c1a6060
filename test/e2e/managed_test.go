//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
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
	a := []string{"suite", "--backend", "kubernetes", "--kubeconfig", e.kubeconfig,
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

	// 3. The run: restricted namespace, toleration, same zone, two pairs.
	out = filepath.Join(e.out, "managed")
	so, se, code := run(t, e.bin, e.managedArgs(out, "--namespace", restrictedNS, "--tolerations", toleration,
		"--placement", "same-zone", "--pairs", "2", "--checks", "cni,mtu,network_policy")...)
	t.Logf("suite stdout:\n%s\nstderr:\n%s", so, se)
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
			if s, ok := r.Summary[metric]; !ok || s.N != 2 || s.Median <= 0 {
				t.Errorf("%s %s: %s summary %+v (errors %v)", p, test, metric, s, repeatErrors(r))
			}
			for _, k := range []string{"k8s_version", "node_kernel", "node_runtime", "client_zone", "server_zone", "cluster", "kube_proxy_mode"} {
				if r.Labels[k] == "" {
					t.Errorf("%s %s: no %s label (labels %v)", p, test, k, r.Labels)
				}
			}
			if r.Labels["client_zone"] != "zone-a" || r.Labels["server_zone"] != "zone-a" {
				t.Errorf("%s %s: zones %q→%q, want zone-a", p, test, r.Labels["client_zone"], r.Labels["server_zone"])
			}
			if x.cni != "bridge" && r.Labels["cni_version"] == "" {
				t.Errorf("%s %s: no cni_version", p, test)
			}
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
	e.assertClean(t, "after the run")
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
