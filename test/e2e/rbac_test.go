//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/preflight"
	"github.com/cnibench/cnibench/internal/kube/rbac"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestRBACSuffices applies what `cnibench k8s rbac` prints in a namespace
// that exists beforehand, and runs the suite with every check as its
// ServiceAccount: the minimal rights must be enough (no "forbidden"), and
// the run must leave the namespace as it found it.
func TestRBACSuffices(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const ns = "cnibench-rbac"
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saConfig := e.applyRBAC(t, ns, rbac.Objects(ns))
	e.runAsServiceAccount(t, ns, saConfig, "rbac")
}

// TestRBACExistingNamespace applies the least-privilege RBAC of `cnibench
// k8s rbac --existing-namespace` (cluster-wide reads only, pods list only
// in the CNIs' namespaces the cluster has) to a namespace labelled for
// privileged pods, checks what it grants and refuses, and runs the suite
// with every check as its ServiceAccount: no "forbidden", and the
// namespace left as it was.
func TestRBACExistingNamespace(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const ns = "cnibench-rbac-existing"
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{preflight.PodSecurityEnforceKey: "privileged"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RoleBindings need their namespace: only the CNI namespaces the
	// cluster has, as --cni-namespaces prints them.
	var cniNamespaces []string
	for _, n := range rbac.DefaultCNINamespaces() {
		if _, err := e.cs.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{}); err == nil {
			cniNamespaces = append(cniNamespaces, n)
		}
	}
	t.Logf("CNI namespaces present: %v", cniNamespaces)
	objs, err := rbac.For(rbac.Options{Namespace: ns, Mode: rbac.ExistingNamespace, CNINamespaces: cniNamespaces})
	if err != nil {
		t.Fatal(err)
	}
	saConfig := e.applyRBAC(t, ns, objs)

	// What the ServiceAccount may and may not do, as the API server's
	// authorizer says.
	user := "system:serviceaccount:" + ns + ":" + rbac.ServiceAccountName
	for _, c := range []struct {
		ns, verb, resource, name string
		allowed                  bool
	}{
		{ns, "get", "namespaces", ns, true}, // its own namespace, through the Role
		{ns, "create", "pods", "", true},
		{"kube-system", "list", "pods", "", true},
		{"kube-system", "get", "configmaps", "kube-proxy", true},
		{"", "list", "nodes", "", true},
		{"", "create", "namespaces", "", false},
		{"", "delete", "namespaces", ns, false},
		{"", "list", "namespaces", "", false},
		{"default", "list", "pods", "", false},
		{"default", "create", "pods", "", false},
		{"kube-system", "get", "configmaps", "coredns", false},
		{"", "create", "ciliumclusterwidenetworkpolicies", "", false},
	} {
		ra := &authzv1.ResourceAttributes{Namespace: c.ns, Verb: c.verb, Resource: c.resource, Name: c.name}
		if c.resource == "ciliumclusterwidenetworkpolicies" {
			ra.Group = "cilium.io"
		}
		r, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: ra}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.allowed {
			t.Errorf("%s %s %q in namespace %q: allowed %v, want %v (%s)", c.verb, c.resource, c.name, c.ns, r.Status.Allowed, c.allowed, r.Status.Reason)
		}
	}
	e.runAsServiceAccount(t, ns, saConfig, "rbac-existing")
}

// applyRBAC creates objs (the output of rbac.Objects or rbac.For for ns),
// removes the cluster-scoped ones and those outside ns, and ns itself, at
// the end of the test, and returns a kubeconfig of ns's ServiceAccount.
func (e *env) applyRBAC(t *testing.T, ns string, objs []runtime.Object) string {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		for _, o := range objs {
			switch o := o.(type) {
			case *rbacv1.ClusterRole:
				_ = e.cs.RbacV1().ClusterRoles().Delete(ctx, o.Name, metav1.DeleteOptions{})
			case *rbacv1.ClusterRoleBinding:
				_ = e.cs.RbacV1().ClusterRoleBindings().Delete(ctx, o.Name, metav1.DeleteOptions{})
			case *rbacv1.RoleBinding:
				if o.Namespace != ns {
					_ = e.cs.RbacV1().RoleBindings(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
				}
			}
		}
		_ = e.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = e.cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = e.cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = e.cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = e.cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = e.cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected RBAC object %T", o)
		}
		if err != nil {
			t.Fatalf("apply %T: %v", o, err)
		}
	}
	exp := int64(3600)
	tok, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, rbac.ServiceAccountName,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kube.LoadConfig(e.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ca := admin.TLSClientConfig.CAData
	if len(ca) == 0 && admin.TLSClientConfig.CAFile != "" {
		if ca, err = os.ReadFile(admin.TLSClientConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	saConfig := filepath.Join(e.out, ns+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, saConfig); err != nil {
		t.Fatal(err)
	}
	return saConfig
}

// runAsServiceAccount runs the suite with every check in ns as the
// ServiceAccount of saConfig, into e.out/dir: it must not be refused
// anything, measure every run, run every check, keep ns (which existed)
// and leave nothing behind.
func (e *env) runAsServiceAccount(t *testing.T, ns, saConfig, dir string) {
	t.Helper()
	ctx := context.Background()
	out := filepath.Join(e.out, dir)
	sa := *e
	sa.kubeconfig = saConfig
	so, se, code := run(t, e.bin, sa.suiteArgs(out, "--namespace", ns, "--tests", "tcp_rr", "--repeat", "1", "--footprint-window", "1s")...)
	t.Logf("suite as the ServiceAccount:\n%s\n%s", so, se)
	if code != 0 {
		t.Fatalf("suite exit %d", code)
	}
	if strings.Contains(strings.ToLower(so+se), "forbidden") {
		t.Error("the ServiceAccount was refused something (\"forbidden\" in the output)")
	}
	set, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Runs {
		if s := r.Summary[result.TransPerSec]; s.N != 1 {
			t.Errorf("%v: not measured: %v", r.Labels, repeatErrors(r))
		}
	}
	for _, f := range set.Findings {
		if f.Verdict == "failed" || f.Verdict == "skipped" {
			b, _ := json.Marshal(f)
			t.Errorf("check %s did not run as the ServiceAccount: %s", f.Check, b)
		}
	}
	if len(set.Findings) != 5 {
		t.Errorf("%d findings, want 5", len(set.Findings))
	}
	// The namespace existed: it stays, empty of the run's objects.
	if _, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the run removed a namespace it did not create: %v", err)
	}
	e.assertClean(t, "after the ServiceAccount's run")
}

// TestFootprintOfNamedPods measures the footprint of pods named with
// --cni-pods. The local cluster's bridge CNI has no pods, so the run's own
// cross-node server stands in for a CNI daemon: it idles, then carries the
// footprint's load, so its CPU must rise; this proves the cgroup readings
// through the privileged host pods, not a CNI's figures.
func TestFootprintOfNamedPods(t *testing.T) {
	e := setup(t)
	out := filepath.Join(e.out, "footprint")
	so, se, code := run(t, e.bin, e.suiteArgs(out, "--tests", "tcp_rr", "--repeat", "1", "--checks", "cni_footprint",
		"--cni-pods", e.ns+"/cnibench.io/pod=srv-b", "--footprint-window", "2s")...)
	if code != 0 {
		t.Fatalf("suite exit %d\n%s\n%s", code, so, se)
	}
	set, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Findings) != 1 {
		t.Fatalf("findings %+v", set.Findings)
	}
	f := set.Findings[0]
	t.Logf("%s: %s: %s\n  %s\n  %v", f.Check, f.Verdict, f.Summary, strings.Join(f.Evidence, "\n  "), f.Metrics)
	m := f.Metrics
	if f.Verdict != "measured" || m["cni_pods_measured"] != 1 {
		t.Fatalf("verdict %s, %v pods measured", f.Verdict, m["cni_pods_measured"])
	}
	if m["cpu_millicores_load"] <= m["cpu_millicores_idle"]+50 {
		t.Errorf("the loaded server used %.1f mCPU against %.1f idle: the load did not show", m["cpu_millicores_load"], m["cpu_millicores_idle"])
	}
	if m["memory_bytes_idle"] <= 0 || m["memory_bytes_load"] <= 0 {
		t.Errorf("no memory working set: %v", m)
	}
	e.assertClean(t, "after the footprint run")
}
