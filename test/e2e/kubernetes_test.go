//go:build e2e

// Package e2e tests cnibench against a real Kubernetes cluster: the
// suite's Kubernetes backend over every path and check, its clean-up on
// success, on Ctrl-C and after a crash (`cnibench k8s clean`), the RBAC it
// prints, and `cnibench compare` of the cluster run with a lab run.
//
// hack/local-cluster/suite-e2e.sh builds the image, starts the local
// two-node cluster and runs this test inside its network namespace:
//
//	CNIBENCH_E2E_BIN          the cnibench binary
//	CNIBENCH_E2E_KUBECONFIG   the cluster's admin kubeconfig
//	CNIBENCH_E2E_IMAGE        the imported cnibench image
//	CNIBENCH_E2E_CNI_CONF_DIR the nodes' CNI configuration directory ({node})
//	CNIBENCH_E2E_OUT          where results go
//	CNIBENCH_E2E_LAB          a lab run's results.json to compare with
//	CNIBENCH_E2E_EXPECT_CNI   the CNI the cluster runs, as up.sh --cni names it (expects in cni_test.go)
//	CNIBENCH_E2E_EXPECT_CNI_VERSION  its version (the family script's CNI_VERSION, its images' tag); "" not checked
//	CNIBENCH_E2E_EGRESS_DENIED, _ALLOWED  IP:PORT of the `cnibench serve` outside the cluster (lib.sh outside_serve)
//	CNIBENCH_E2E_KUBE_PROXY_CGROUP  kube-proxy's cgroup outside pods (--kube-proxy-cgroup; lib.sh KUBE_PROXY_CGROUP)
//	CNIBENCH_E2E_EXPECT_KUBE_PROXY_MODE  the mode kube-proxy runs in (lib.sh KUBE_PROXY_MODE); "" not checked
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/pkg/result"
)

type env struct {
	bin, kubeconfig, image, cniConf, out, lab, cni string
	// cniVersion is the version cnibench must read for a CNI other
	// than bridge (CNIBENCH_E2E_EXPECT_CNI_VERSION; "" if not checked).
	cniVersion string
	// egressDenied and egressAllowed are the servers outside the cluster
	// (CNIBENCH_E2E_EGRESS_DENIED, _ALLOWED; "" if the cluster has none).
	egressDenied, egressAllowed string
	cs                          kubernetes.Interface
	// ns is the test's own namespace (testNamespace), so that no test
	// meets the one before's namespace while it terminates.
	ns string
	// Services at scale (issue 36): kube-proxy's cgroup outside pods
	// (CNIBENCH_E2E_KUBE_PROXY_CGROUP, --kube-proxy-cgroup) and its mode
	// (CNIBENCH_E2E_EXPECT_KUBE_PROXY_MODE; "" if not checked).
	kubeProxyCgroup, kubeProxyMode string
	// lbPool is the prefix of the addresses the local cluster's
	// load-balancer address controller gives (CNIBENCH_E2E_LB_POOL, e.g.
	// "198.19.0."; "" when none runs: a LoadBalancer service then gets no
	// address).
	lbPool string
	// lbExternal: the test runs outside the nodes (the harness's outside
	// network namespace), which routes lbPool to a node whose proxy takes
	// it (CNIBENCH_E2E_LB_EXTERNAL=1), so external-to-loadbalancer is
	// measured too.
	lbExternal bool
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{
		bin: os.Getenv("CNIBENCH_E2E_BIN"), kubeconfig: os.Getenv("CNIBENCH_E2E_KUBECONFIG"),
		image: os.Getenv("CNIBENCH_E2E_IMAGE"), cniConf: os.Getenv("CNIBENCH_E2E_CNI_CONF_DIR"),
		out: os.Getenv("CNIBENCH_E2E_OUT"), lab: os.Getenv("CNIBENCH_E2E_LAB"), cni: os.Getenv("CNIBENCH_E2E_EXPECT_CNI"),
		cniVersion:   os.Getenv("CNIBENCH_E2E_EXPECT_CNI_VERSION"),
		egressDenied: os.Getenv("CNIBENCH_E2E_EGRESS_DENIED"), egressAllowed: os.Getenv("CNIBENCH_E2E_EGRESS_ALLOWED"),
		kubeProxyCgroup: os.Getenv("CNIBENCH_E2E_KUBE_PROXY_CGROUP"), kubeProxyMode: os.Getenv("CNIBENCH_E2E_EXPECT_KUBE_PROXY_MODE"),
		lbPool: os.Getenv("CNIBENCH_E2E_LB_POOL"), lbExternal: os.Getenv("CNIBENCH_E2E_LB_EXTERNAL") == "1",
	}
	if e.bin == "" || e.kubeconfig == "" || e.image == "" || e.out == "" {
		t.Skip("no cluster: run hack/local-cluster/suite-e2e.sh (it sets CNIBENCH_E2E_*)")
	}
	cfg, err := kube.LoadConfig(e.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if e.cs, err = kube.NewClient(cfg); err != nil {
		t.Fatal(err)
	}
	e.ns = testNamespace(t.Name())
	e.waitClean(t, 3*time.Minute)
	return e
}

// testNamespace is the namespace a test's runs use: cnibench-e2e- and the
// test's name without "Test", in lower case, as a DNS label.
func testNamespace(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimPrefix(test, "Test")) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	ns := "cnibench-e2e-" + strings.Trim(b.String(), "-")
	if len(ns) > 63 {
		ns = strings.TrimRight(ns[:63], "-")
	}
	return ns
}

// gaveUp is set once a test's waitClean timed out.
var gaveUp bool

// waitClean waits, at most timeout, until no object of an earlier run is
// left (leftovers), saying what it waited for; it fails the test if they
// are still there then. A test that left them has failed already (each
// checks after its run); this keeps the next one from failing for it.
func (e *env) waitClean(t *testing.T, timeout time.Duration) {
	t.Helper()
	first := e.leftovers(t)
	if len(first) == 0 {
		return
	}
	if gaveUp {
		// An earlier test waited the whole time already: no test after it
		// waits again for the same objects.
		t.Fatalf("an earlier run's objects are still there (an earlier test waited %v for them): %s", timeout, strings.Join(first, ", "))
	}
	t0 := time.Now()
	t.Logf("waiting (at most %v) for an earlier run's objects to go: %s", timeout, strings.Join(first, ", "))
	var left []string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(context.Context) (bool, error) {
		left = e.leftovers(t)
		return len(left) == 0, nil
	})
	if err != nil {
		gaveUp = true
		t.Fatalf("an earlier run's objects still there after %v: %s", timeout, strings.Join(left, ", "))
	}
	t.Logf("an earlier run's objects went in %.1fs", time.Since(t0).Seconds())
}

// suiteArgs are a brief suite on the cluster: every path, three tests.
func (e *env) suiteArgs(out string, extra ...string) []string {
	a := []string{"suite", "--backend", "kubernetes", "--kubeconfig", e.kubeconfig, "--namespace", e.ns,
		"--image", e.image, "--image-pull-policy", "Never", "--cluster-name", "local-2node",
		"--tests", "tcp_stream,tcp_rr,tcp_crr", "--flows", "1", "--repeat", "2",
		"--duration", "0.5s", "--warmup", "0.1s", "--seed", "4242", "--out", out,
		// The local cluster's control plane shares the host with the pods:
		// interference is measured (asserted below) but repeats are not
		// re-run for it; the rule is tested in the lab (test/labsuite).
		"--busy-threshold", "0"}
	if e.cniConf != "" {
		a = append(a, "--cni-conf-dir", e.cniConf)
	}
	return append(a, extra...)
}

// measuredTwice finds the one run matching match and checks that its
// primary metric (throughput for tcp_stream, else transactions per second)
// was measured in both repeats; ok is false (and the test failed) if not
// found.
func measuredTwice(t *testing.T, set *result.Set, match map[string]string) (result.Run, bool) {
	t.Helper()
	runs := set.Find(match)
	if len(runs) != 1 {
		t.Errorf("%v: %d runs, want 1 (skipped: %v)", match, len(runs), set.Skipped)
		return result.Run{}, false
	}
	r := runs[0]
	metric := result.TransPerSec
	if match["test"] == "tcp_stream" {
		metric = result.ThroughputBitsPerSec
	}
	if s, ok := r.Summary[metric]; !ok || s.N != 2 || s.Median <= 0 {
		t.Errorf("%v: %s summary %+v (errors: %v)", match, metric, s, repeatErrors(r))
	}
	return r, true
}

// leftovers lists every object a run may leave: namespaces and pods
// labelled managed-by=cnibench anywhere.
func (e *env) leftovers(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kube.ManagedByKey + "=" + kube.ManagedBy}
	var out []string
	nss, err := e.cs.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nss.Items {
		out = append(out, "namespace "+n.Name+" ("+string(n.Status.Phase)+")")
	}
	for _, list := range []func() ([]string, error){
		func() ([]string, error) {
			l, err := e.cs.CoreV1().Pods("").List(ctx, sel)
			if err != nil {
				return nil, err
			}
			var s []string
			for _, p := range l.Items {
				s = append(s, "pod "+p.Namespace+"/"+p.Name)
			}
			return s, nil
		},
		func() ([]string, error) {
			l, err := e.cs.CoreV1().Services("").List(ctx, sel)
			if err != nil {
				return nil, err
			}
			var s []string
			for _, p := range l.Items {
				s = append(s, "service "+p.Namespace+"/"+p.Name)
			}
			return s, nil
		},
		func() ([]string, error) {
			l, err := e.cs.NetworkingV1().NetworkPolicies("").List(ctx, sel)
			if err != nil {
				return nil, err
			}
			var s []string
			for _, p := range l.Items {
				s = append(s, "networkpolicy "+p.Namespace+"/"+p.Name)
			}
			return s, nil
		},
	} {
		s, err := list()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s...)
	}
	return out
}

func (e *env) assertClean(t *testing.T, when string) {
	t.Helper()
	if l := e.leftovers(t); len(l) > 0 {
		t.Errorf("%s: left behind: %s", when, strings.Join(l, ", "))
	}
}

func run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return so.String(), se.String(), code
}

// runSuite runs cnibench with args (a suite writing to out), logs its
// output, fails the test on a non-zero exit and returns the results.
func runSuite(t *testing.T, bin, out string, args []string) *result.Set {
	t.Helper()
	so, se, code := run(t, bin, args...)
	t.Logf("suite stdout:\n%s\nstderr:\n%s", so, se)
	if code != 0 {
		t.Fatalf("suite exit %d", code)
	}
	set, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestSuiteOnCluster runs the suite over every path with every check and
// checks the results, the report, the comparison with a lab run and that
// nothing is left on the cluster.
func TestSuiteOnCluster(t *testing.T) {
	e := setup(t)
	e.assertClean(t, "before the run")
	out := filepath.Join(e.out, "k8s")
	var lb []string
	if e.lbPool != "" {
		lb = []string{"--load-balancer", "--load-balancer-timeout", "1m"}
		if e.lbExternal {
			lb = append(lb, "--load-balancer-external")
		}
	}
	set := runSuite(t, e.bin, out, e.suiteArgs(out, lb...))
	// The idle probe ran before the first cell, and the run's figures of
	// other programs' CPU were summed up (the rule itself is off here).
	if in := set.Interference; in == nil || in.IdleSeconds <= 0 || in.Repeats == 0 || in.ThresholdPct != 0 {
		t.Errorf("interference %+v: want the idle probe and the windows' figures", in)
	}
	x := e.expected(t)
	cniDP := "cni-" + x.cni
	want := map[string][]string{"baseline": {"node-to-node"}, cniDP: {"same-node", "cross-node", "pod-to-endpoint", "pod-to-service", "hairpin", "pod-to-nodeport"}}
	if e.lbPool != "" {
		// the LoadBalancer service's address, given by the harness's
		// controller and programmed by kube-proxy or the CNI
		want[cniDP] = append(want[cniDP], "pod-to-loadbalancer")
		for _, r := range set.Find(map[string]string{"path": "pod-to-loadbalancer"}) {
			if ip := r.Config["target_ip"]; !strings.HasPrefix(ip, e.lbPool) {
				t.Errorf("pod-to-loadbalancer %s: target %q, want an address of the harness's pool %s*", r.Labels["test"], ip, e.lbPool)
			}
		}
	}
	if e.lbExternal {
		// from beyond the nodes, the client this test's own machine
		for _, test := range []string{"tcp_stream", "tcp_rr", "tcp_crr"} {
			r, ok := measuredTwice(t, set, map[string]string{"datapath": cniDP, "path": "external-to-loadbalancer", "test": test})
			if !ok {
				continue
			}
			if ip := r.Config["target_ip"]; !strings.HasPrefix(ip, e.lbPool) || r.Labels["client_node"] != "external" || r.Labels["server_node"] == "" {
				t.Errorf("external-to-loadbalancer %s: target %q, labels %v", test, ip, r.Labels)
			}
		}
	}
	for dp, paths := range want {
		for _, p := range paths {
			for _, test := range []string{"tcp_stream", "tcp_rr", "tcp_crr"} {
				r, ok := measuredTwice(t, set, map[string]string{"datapath": dp, "path": p, "test": test, "backend": "kubernetes", "cluster": "local-2node"})
				if !ok {
					continue
				}
				// The path counters of the pods and nodes, read around
				// every cell.
				for _, x := range r.Repeats {
					if _, ok := x.Metrics["k8s_pods_syn_retransmits"]; x.Metrics != nil && !ok {
						t.Errorf("%s %s %s: repeat %d lacks the pods' TCP counters (warnings %q)", dp, p, test, x.Index, r.Warnings)
					}
					// Other programs' CPU on the node, the pods' cgroups
					// left out, in every window.
					if _, ok := x.Metrics[result.ForeignCPUPct]; x.Error == "" && !ok {
						t.Errorf("%s %s %s: repeat %d lacks foreign_cpu_pct (warnings %q)", dp, p, test, x.Index, r.Warnings)
					}
				}
				if dp == cniDP && (r.Labels["cni"] != x.cni || !x.modeMatches(r.Labels["cni_mode"]) || !e.versionMatches(x, r.Labels["cni_version"])) {
					t.Errorf("%s %s %s: labels cni=%q cni_version=%q cni_mode=%q, want %s %s in mode %q", dp, p, test,
						r.Labels["cni"], r.Labels["cni_version"], r.Labels["cni_mode"], x.cni, e.cniVersion, x.mode)
				}
				if r.Labels["client_node"] == "" || r.Labels["server_node"] == "" || r.Labels["mtu"] == "" {
					t.Errorf("%s %s %s: labels %v lack nodes or mtu", dp, p, test, r.Labels)
				}
				if p != "same-node" && p != "hairpin" && r.Labels["client_node"] == r.Labels["server_node"] {
					t.Errorf("%s %s: client and server on one node %s", dp, p, r.Labels["client_node"])
				}
				if p == "same-node" && r.Labels["client_node"] != r.Labels["server_node"] {
					t.Errorf("same-node across nodes: %v", r.Labels)
				}
			}
		}
	}
	verdicts := map[string]string{}
	for _, f := range set.Findings {
		verdicts[f.Check] = f.Verdict
		t.Logf("finding %s: %s: %s\n  %s\n  %v", f.Check, f.Verdict, f.Summary, strings.Join(f.Evidence, "\n  "), f.Metrics)
	}
	// What the harness installed: its policy support, its agents; the MTU
	// right for its encapsulation, no encryption on the wire.
	wantVerdicts := map[string]string{"cni": "identified", "mtu": "correct", "network_policy": x.policy, "encryption": "clear", "cni_footprint": x.footprint}
	for c, v := range wantVerdicts {
		if verdicts[c] != v {
			t.Errorf("check %s: verdict %q, want %q", c, verdicts[c], v)
		}
	}
	for _, f := range set.Findings {
		if f.Check == "cni" && (f.Labels["cni"] != x.cni || !x.modeMatches(f.Labels["cni_mode"])) {
			t.Errorf("cni finding names %q in mode %q, want %q in mode %q", f.Labels["cni"], f.Labels["cni_mode"], x.cni, x.mode)
		}
		if f.Check == "cni_footprint" && x.agents > 0 {
			if m := f.Metrics; m["cni_pods_measured"] < float64(x.agents) || m["cpu_millicores_idle"] <= 0 || m["memory_bytes_load"] <= 0 {
				t.Errorf("footprint: %v, want at least %d agents measured with CPU and memory", m, x.agents)
			}
		}
	}
	for _, name := range []string{"report.html", "report.md"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"Checks", x.policy, "local-2node", "hairpin", "pod-to-service"} {
			if !bytes.Contains(b, []byte(s)) {
				t.Errorf("%s does not mention %q", name, s)
			}
		}
	}
	e.assertClean(t, "after the run")

	if e.lab != "" {
		so, se, code := run(t, e.bin, "compare", "--match", "path,test,flows", e.lab, filepath.Join(out, "results.json"))
		t.Logf("compare:\n%s%s", so, se)
		if code != 0 {
			t.Fatalf("compare exit %d", code)
		}
		for _, s := range []string{"cross-node", "node-to-node", "tcp_crr"} {
			if !strings.Contains(so, s) {
				t.Errorf("compare output does not mention %s", s)
			}
		}
	}
}

func repeatErrors(r result.Run) []string {
	var out []string
	for _, x := range r.Repeats {
		if x.Error != "" {
			out = append(out, x.Error)
		}
	}
	return out
}

// startSuite starts cmd; the returned channel gets its Wait result.
func startSuite(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done
}

// waitPods waits until n of the run's pods run in the test's namespace; it
// fails at once, with the suite's stderr, if the suite exits first.
func (e *env) waitPods(t *testing.T, n int, done <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("the suite exited before its pods ran (%v): %s", err, stderr.String())
		default:
		}
		l, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.ManagedByKey + "=" + kube.ManagedBy})
		if err != nil {
			return false, nil
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == "Running" {
				running++
			}
		}
		return running >= n, nil
	})
	if err != nil {
		t.Fatalf("the run's %d pods did not come up: %v", n, err)
	}
}

// TestInterruptedRunCleansUp sends SIGINT once the pods run: the suite
// exits 130, keeps what it measured and removes its objects.
func TestInterruptedRunCleansUp(t *testing.T) {
	e := setup(t)
	out := filepath.Join(e.out, "interrupted")
	cmd := exec.Command(e.bin, e.suiteArgs(out, "--checks", "none", "--repeat", "50")...)
	var se bytes.Buffer
	cmd.Stderr = &se
	done := startSuite(t, cmd)
	e.waitPods(t, 5, done, &se)
	time.Sleep(3 * time.Second) // a few cells measured
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the suite did not stop within 3 minutes of SIGINT:\n%s", se.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, se.String())
	}
	set, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !set.Interrupted {
		t.Error("results not marked interrupted")
	}
	e.assertClean(t, "after SIGINT")
}

// TestCleanAfterCrash kills the suite with SIGKILL (it cannot clean up)
// and checks that `cnibench k8s clean` removes what it left.
func TestCleanAfterCrash(t *testing.T) {
	e := setup(t)
	out := filepath.Join(e.out, "crashed")
	cmd := exec.Command(e.bin, e.suiteArgs(out, "--checks", "none", "--repeat", "50")...)
	var se bytes.Buffer
	cmd.Stderr = &se
	done := startSuite(t, cmd)
	e.waitPods(t, 5, done, &se)
	_ = cmd.Process.Kill()
	<-done
	if len(e.leftovers(t)) == 0 {
		t.Fatal("a killed run left nothing: the test proves nothing")
	}
	so, cse, code := run(t, e.bin, "k8s", "clean", "--kubeconfig", e.kubeconfig, "--namespace", e.ns)
	t.Logf("clean:\n%s%s", so, cse)
	if code != 0 {
		t.Fatalf("clean exit %d", code)
	}
	if !strings.Contains(so, "removed ") {
		t.Errorf("clean printed no removal: %q", so)
	}
	e.assertClean(t, "after k8s clean")
}
