package k8scmd

import (
	"bytes"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/cnibench/cnibench/internal/cli/clitest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// `k8s rbac` prints the RBAC objects as kubectl-applicable YAML: the
// golden file, and documents of the expected kinds in the namespace, for
// each mode.
func TestRBAC(t *testing.T) {
	tests := []struct {
		name, golden string
		args         []string
		kinds        string
		// namespaces of the RoleBindings outside x (the CNIs').
		cniNamespaces []string
	}{
		{"full", "rbac.golden", nil, "ServiceAccount,ClusterRole,ClusterRoleBinding,Role,RoleBinding", nil},
		{"existing namespace", "rbac-existing-namespace.golden", []string{"--existing-namespace", "--cni-namespaces", "kube-system, cilium"},
			"ServiceAccount,ClusterRole,ClusterRoleBinding,Role,RoleBinding,ClusterRole,RoleBinding,RoleBinding", []string{"kube-system", "cilium"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testRBAC(t, tt.golden, tt.args, tt.kinds, tt.cniNamespaces)
		})
	}
}

func testRBAC(t *testing.T, goldenName string, args []string, wantKinds string, cniNamespaces []string) {
	stdout, stderr, code := clitest.Execute(t, NewCommand, append([]string{"rbac", "--namespace", "x"}, args...)...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	golden := filepath.Join("testdata", goldenName)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if stdout != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", golden, stdout)
	}

	docs := strings.Split(stdout, "\n---\n")
	for _, l := range strings.Split(docs[0], "\n") {
		if !strings.HasPrefix(l, "# ") {
			t.Errorf("preamble line %q: want comment lines only", l)
		}
	}
	if !strings.Contains(docs[0], "kubectl label namespace x pod-security.kubernetes.io/enforce=privileged") {
		t.Errorf("preamble without the Pod Security label:\n%s", docs[0])
	}
	var kinds []string
	var cniBound []string
	for i, d := range docs[1:] {
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string            `json:"name"`
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
			Rules []struct {
				APIGroups []string `json:"apiGroups"`
				Resources []string `json:"resources"`
				Verbs     []string `json:"verbs"`
			} `json:"rules"`
			Subjects []struct {
				Kind, Name, Namespace string
			} `json:"subjects"`
		}
		if err := yaml.UnmarshalStrict([]byte(stripComments(d)), &obj, yaml.DisallowUnknownFields); err != nil {
			// Strict about syntax, not about the fields this test
			// does not model: retry leniently for those.
			if err2 := yaml.Unmarshal([]byte(d), &obj); err2 != nil {
				t.Fatalf("document %d does not parse: %v\n%s", i+1, err2, d)
			}
		}
		if !strings.HasPrefix(d, "# ") {
			t.Errorf("document %d (%s) has no explanatory comment", i+1, obj.Kind)
		}
		kinds = append(kinds, obj.Kind)
		if obj.APIVersion == "" || obj.Metadata.Name == "" || obj.Metadata.Labels["app.kubernetes.io/part-of"] != "cnibench" {
			t.Errorf("%s: metadata %+v (apiVersion %q)", obj.Kind, obj.Metadata, obj.APIVersion)
		}
		// Namespaced objects live in x; the cluster-wide ones in none.
		clusterWide := strings.HasPrefix(obj.Kind, "Cluster")
		if obj.Kind == "RoleBinding" && obj.Metadata.Namespace != "x" {
			// The CNIs' namespaces: pods list only.
			cniBound = append(cniBound, obj.Metadata.Namespace)
		} else if clusterWide != (obj.Metadata.Namespace == "") || (!clusterWide && obj.Metadata.Namespace != "x") {
			t.Errorf("%s in namespace %q", obj.Kind, obj.Metadata.Namespace)
		}
		if strings.HasSuffix(obj.Kind, "Binding") && (len(obj.Subjects) != 1 || obj.Subjects[0].Kind != "ServiceAccount" || obj.Subjects[0].Name != "cnibench" || obj.Subjects[0].Namespace != "x") {
			t.Errorf("%s subjects %+v", obj.Kind, obj.Subjects)
		}
		if strings.HasSuffix(obj.Kind, "Role") && len(obj.Rules) == 0 {
			t.Errorf("%s has no rules", obj.Kind)
		}
		for _, r := range obj.Rules {
			for _, v := range r.Verbs {
				if v == "*" {
					t.Errorf("%s: wildcard verb in %+v", obj.Kind, r)
				}
			}
		}
	}
	if got := strings.Join(kinds, ","); got != wantKinds {
		t.Errorf("kinds %s, want %s", got, wantKinds)
	}
	if strings.Join(cniBound, ",") != strings.Join(cniNamespaces, ",") {
		t.Errorf("RoleBindings in %v, want %v", cniBound, cniNamespaces)
	}
	if !strings.Contains(stdout, "name: cnibench-x\n") {
		t.Error("the ClusterRoleBinding is not named after the namespace")
	}
}

// stripComments removes the comment lines of a YAML document.
func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.SplitAfter(doc, "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func TestRBACDefaultNamespaceAndArgs(t *testing.T) {
	stdout, _, code := clitest.Execute(t, NewCommand, "rbac")
	if code != 0 || !strings.Contains(stdout, "namespace: cnibench\n") {
		t.Errorf("default namespace: exit %d\n%s", code, stdout)
	}
	// cobra.NoArgs's error is not a usage error: exit 1, as every
	// command's of the tree.
	if _, stderr, code := clitest.Execute(t, NewCommand, "rbac", "extra"); code == 0 || !strings.Contains(stderr, `"extra"`) {
		t.Errorf("extra argument: exit %d, stderr %q", code, stderr)
	}
}

// Bad flags are usage errors (exit 2) of one line naming the flag.
func TestRBACBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{"invalid namespace", []string{"--namespace", "Bad_Name!"}, `--namespace: "Bad_Name!" is not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'`},
		{"empty namespace", []string{"--namespace", ""}, `--namespace: "" is not a valid namespace name`},
		{"long namespace", []string{"--namespace", strings.Repeat("n", 64)}, "--namespace: " + `"` + strings.Repeat("n", 64) + `" is not a valid namespace name: must be no more than 63 characters`},
		{"cni namespaces without existing", []string{"--cni-namespaces", "cilium"}, "--cni-namespaces: applies to --existing-namespace only"},
		{"empty cni namespace", []string{"--existing-namespace", "--cni-namespaces", "cilium,,kube-system"}, `--cni-namespaces "cilium,,kube-system": empty element`},
		{"invalid cni namespace", []string{"--existing-namespace", "--cni-namespaces", "Kube-System"}, `--cni-namespaces: "Kube-System" is not a valid namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := clitest.Execute(t, NewCommand, append([]string{"rbac"}, tt.args...)...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			if !strings.Contains(stderr, tt.err) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line containing %q", stderr, tt.err)
			}
		})
	}
}

// kubeconfigFor writes a kubeconfig whose cluster is at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
		"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// `k8s clean` against a cluster that cannot be reached fails, within its
// --timeout, with an error of one line.
func TestCleanUnreachable(t *testing.T) {
	// A listener that accepts and never answers: only the timeout ends
	// the requests.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	tests := []struct {
		name, server, timeout string
		bound                 time.Duration
	}{
		{"connection refused", "https://127.0.0.1:1", "2s", 2500 * time.Millisecond},
		{"no answer", "http://" + ln.Addr().String(), "500ms", 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := clitest.Execute(t, NewCommand, "clean", "--kubeconfig", kubeconfigFor(t, tt.server), "--timeout", tt.timeout)
			took := time.Since(start)
			t.Logf("took %v, stderr %q", took, stderr)
			if took > tt.bound {
				t.Errorf("took %v with --timeout %s", took, tt.timeout)
			}
			if code != 1 || !strings.HasPrefix(stderr, "cnibench: clean: ") {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
			if strings.Contains(stdout, "nothing to remove") {
				t.Errorf("stdout %q", stdout)
			}
			if n := strings.Count(stderr, "\n"); n != 1 {
				t.Errorf("the error has %d lines: %q", n, stderr)
			}
		})
	}
}
