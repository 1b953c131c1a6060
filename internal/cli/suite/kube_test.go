package suitecmd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/cli/streams"
)

// apiServer is an API server that counts the requests it gets and
// answers none; kubeconfig is a kubeconfig file pointing at it.
func apiServer(t *testing.T) (kubeconfig string, requests *atomic.Int64) {
	t.Helper()
	requests = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "test server: no API here", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: test-cluster
  cluster:
    server: ` + srv.URL + `
contexts:
- name: test
  context:
    cluster: test-cluster
    user: test
current-context: test
users:
- name: test
  user:
    token: not-a-secret
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, requests
}

// The Kubernetes backend's flags are checked before anything runs: a bad
// one is a usage error (exit 2), one line naming the flag, and the
// cluster is never contacted.
func TestKubeFlagsValidation(t *testing.T) {
	kubeconfig, requests := apiServer(t)
	t.Setenv("KUBECONFIG", kubeconfig)
	k8s := []string{"--backend", "kubernetes", "--kubeconfig", kubeconfig}
	tests := []struct {
		name string
		args []string
		want string // stderr prefix after "cnibench: "
	}{
		{"kubeconfig with the lab", []string{"--backend", "lab", "--kubeconfig", kubeconfig}, "--kubeconfig: applies to --backend kubernetes only"},
		{"kubeconfig with the default backend", []string{"--kubeconfig", kubeconfig}, "--kubeconfig: applies to --backend kubernetes only"},
		{"context with the lab", []string{"--context", "c"}, "--context: applies to --backend kubernetes only"},
		{"namespace with the lab", []string{"--namespace", "n"}, "--namespace: applies to --backend kubernetes only"},
		{"image with the lab", []string{"--image", "i"}, "--image: applies to --backend kubernetes only"},
		{"pull policy with the lab", []string{"--image-pull-policy", "Never"}, "--image-pull-policy: applies to --backend kubernetes only"},
		{"nodes with the lab", []string{"--client-node", "a"}, "--client-node: applies to --backend kubernetes only"},
		{"server node with the lab", []string{"--server-node", "b"}, "--server-node: applies to --backend kubernetes only"},
		{"host port with the lab", []string{"--host-port", "1"}, "--host-port: applies to --backend kubernetes only"},
		{"cni conf dir with the lab", []string{"--cni-conf-dir", "/x"}, "--cni-conf-dir: applies to --backend kubernetes only"},
		{"cni pods with the lab", []string{"--cni-pods", "a/b=c"}, "--cni-pods: applies to --backend kubernetes only"},
		{"checks with the lab", []string{"--checks", "mtu"}, "--checks: applies to --backend kubernetes only"},
		{"cluster name with the lab", []string{"--cluster-name", "c"}, "--cluster-name: applies to --backend kubernetes only"},
		{"external load balancer with the lab", []string{"--load-balancer-external"}, "--load-balancer-external: applies to --backend kubernetes only"},
		{"external load balancer without one", append(k8s, "--load-balancer-external"), "--load-balancer-external: it measures the LoadBalancer service's address; add --load-balancer"},
		{"footprint window with the lab", []string{"--footprint-window", "1s"}, "--footprint-window: applies to --backend kubernetes only"},
		{"unknown backend", []string{"--backend", "foo"}, `--backend "foo": must be one of lab, kubernetes`},
		{"pull policy", append(k8s, "--image-pull-policy", "Sometimes"), `--image-pull-policy "Sometimes": must be Always, IfNotPresent or Never`},
		{"pull policy is case-sensitive", append(k8s, "--image-pull-policy", "never"), `--image-pull-policy "never"`},
		{"unknown check", append(k8s, "--checks", "mtu,bogus"), "--checks bogus: unknown check (known: cni, mtu, network_policy, encryption, cni_footprint, or none)"},
		{"empty check", append(k8s, "--checks", "mtu,,cni"), `--checks "mtu,,cni": empty element`},
		{"host port", append(k8s, "--host-port", "12870"), "--host-port 12870: must be a free port"},
		{"cni pods", append(k8s, "--cni-pods", "k8s-app=cilium"), `--cni-pods "k8s-app=cilium": must be NAMESPACE/LABEL=VALUE`},
		{"footprint window", append(k8s, "--footprint-window", "-1s"), "--footprint-window -1s: must not be negative"},
		{"api rate with the lab", []string{"--api-qps", "500"}, "--api-qps: applies to --backend kubernetes only"},
		{"api qps", append(k8s, "--api-qps", "0"), "--api-qps 0, --api-burst 100: must be positive"},
		{"api qps too high", append(k8s, "--api-qps", "1e6"), "--api-qps 1e+06: must be between 1 and 5000 requests/s"},
		{"api burst", append(k8s, "--api-burst", "-1"), "--api-qps 50, --api-burst -1: must be positive"},
		{"kube-proxy cgroup", append(k8s, "--kube-proxy-cgroup", "../{node}"), `--kube-proxy-cgroup "../{node}": not a cgroup path`},
		// The lab's own flags, and what a cluster cannot honour.
		{"datapaths", append(k8s, "--datapaths", "x"), "--datapaths: applies to the lab only, not --backend kubernetes; drop --datapaths"},
		{"pin", append(k8s, "--pin", "split"), "--pin: applies to the lab only"},
		{"wire", append(k8s, "--wire", "veth"), "--wire: applies to the lab only"},
		{"conntrack variants", append(k8s, "--no-conntrack-scenario"), "--no-conntrack-scenario: applies to the lab only"},
		{"several MTUs", append(k8s, "--mtu", "1500,9000"), "--mtu: the kubernetes backend measures the cluster's MTU as it is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := clitest.Execute(t, NewCommand, append(tt.args, "--out", t.TempDir())...)
			if code != 2 || !strings.HasPrefix(stderr, "cnibench: "+tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line starting with %q", code, stderr, "cnibench: "+tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the API server got %d requests: validation must come before any connection", n)
	}
}

// The flags become the backend's options; a cluster gets one MTU and no
// conntrack variant unless asked.
func TestKubeOptionsFromFlags(t *testing.T) {
	cmd, f := newCommand(nil, streams.IOStreams{})
	if err := cmd.ParseFlags([]string{"--profile", "standard", "--backend", "kubernetes", "--kubeconfig", "/k", "--context", "ctx",
		"--namespace", "bench", "--image", "reg/cnibench:1", "--image-pull-policy", "Always", "--client-node", "w1", "--server-node", "role=srv",
		"--host-port", "15000", "--cni-conf-dir", "/etc/{node}/cni", "--cni-pods", "kube-system/k8s-app=cilium", "--checks", "mtu, cni",
		"--footprint-window", "3s", "--api-qps", "400", "--api-burst", "800", "--kube-proxy-cgroup", "cnbk8s-{node}/kube-proxy"}); err != nil {
		t.Fatal(err)
	}
	o, err := f.options(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.MTUs) != 1 || o.MTUs[0] != 1500 {
		t.Errorf("suite options: MTUs %v", o.MTUs)
	}
	ko, err := f.Kube.options()
	if err != nil {
		t.Fatal(err)
	}
	if ko.Kubeconfig != "/k" || ko.Context != "ctx" || ko.Namespace != "bench" || ko.Image != "reg/cnibench:1" || ko.PullPolicy != corev1.PullAlways ||
		ko.Nodes.Client != "w1" || ko.Nodes.Server != "role=srv" || ko.HostPort != 15000 || ko.CNIConfDir != "/etc/{node}/cni" ||
		ko.CNIPods != "kube-system/k8s-app=cilium" || strings.Join(ko.Checks, ",") != "mtu,cni" || ko.FootprintWindow != 3*time.Second ||
		ko.APIQPS != 400 || ko.APIBurst != 800 || ko.KubeProxyCgroup != "cnbk8s-{node}/kube-proxy" {
		t.Errorf("kubernetes options %+v", ko)
	}

	// Given explicitly, --mtu is kept (and refused with two values later,
	// by the suite).
	cmd, f = newCommand(nil, streams.IOStreams{})
	if err := cmd.ParseFlags([]string{"--backend", "kubernetes", "--mtu", "1500,9000"}); err != nil {
		t.Fatal(err)
	}
	if o, err = f.options(cmd); err != nil || len(o.MTUs) != 2 {
		t.Errorf("explicit --mtu: %v %v", o.MTUs, err)
	}
}
