package rbac

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/cnibench/cnibench/internal/kube/cni"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestYAMLFor(t *testing.T) {
	tests := []struct {
		name, golden string
		o            Options
		docs         int
	}{
		{"full", "rbac.golden", Options{Namespace: "bench"}, 5},
		{"existing namespace", "rbac-existing-namespace.golden", Options{Namespace: "bench", Mode: ExistingNamespace}, 6 + len(DefaultCNINamespaces())},
		{"existing namespace, two CNI namespaces", "rbac-existing-namespace-cni.golden",
			Options{Namespace: "bench", Mode: ExistingNamespace, CNINamespaces: []string{"kube-system", "cilium"}}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := YAMLFor(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("YAMLFor differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
			// Every document parses, and is commented; the header
			// names the Pod Security labels.
			parts := strings.Split(string(got), "---\n")
			if !strings.Contains(parts[0], "pod-security.kubernetes.io/enforce=privileged") || !strings.Contains(parts[0], "--checks none --no-host-pods") {
				t.Errorf("header without the Pod Security labels:\n%s", parts[0])
			}
			docs := parts[1:]
			if len(docs) != tt.docs {
				t.Fatalf("%d documents, want %d", len(docs), tt.docs)
			}
			for _, d := range docs {
				if !strings.HasPrefix(d, "# ") {
					t.Errorf("document without comment:\n%s", d)
				}
				var m map[string]any
				if err := yaml.Unmarshal([]byte(d), &m); err != nil || m["kind"] == nil || m["apiVersion"] == nil {
					t.Errorf("document %q: %v, %v", d, m, err)
				}
			}
		})
	}
	// YAML is the full mode.
	full, err := YAML("bench")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := YAMLFor(Options{Namespace: "bench"}); !bytes.Equal(full, want) {
		t.Error("YAML is not YAMLFor's full mode")
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		err  string
	}{
		{"valid", Options{Namespace: "bench"}, ""},
		{"valid existing", Options{Namespace: "b-1", Mode: ExistingNamespace, CNINamespaces: []string{"cilium"}}, ""},
		{"invalid characters", Options{Namespace: "Bad_Name!"}, `namespace: "Bad_Name!" is not a valid namespace name: a lowercase RFC 1123 label must consist of`},
		{"empty", Options{Namespace: ""}, `namespace: "" is not a valid namespace name`},
		{"too long", Options{Namespace: strings.Repeat("a", 64)}, "must be no more than 63 characters"},
		{"bad CNI namespace", Options{Namespace: "b", Mode: ExistingNamespace, CNINamespaces: []string{"kube_system"}}, `CNI namespaces: "kube_system" is not a valid namespace name`},
		{"unknown mode", Options{Namespace: "b", Mode: 7}, "RBAC mode 7: unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tt.err)
			}
			if _, err := YAMLFor(tt.o); err == nil {
				t.Error("YAMLFor rendered invalid options")
			}
			if _, err := For(tt.o); err == nil {
				t.Error("For rendered invalid options")
			}
		})
	}
}

// allows tells whether rules allow verb on group/res (named name, if not
// "").
func allows(rules []rbacv1.PolicyRule, group, res, verb string, name ...string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || (len(name) > 0 && slices.Contains(r.ResourceNames, name[0]))) {
			return true
		}
	}
	return false
}

func TestExistingNamespace(t *testing.T) {
	objs, err := For(Options{Namespace: "bench", Mode: ExistingNamespace, CNINamespaces: []string{"kube-system", "cilium", "calico-system"}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	var role *rbacv1.Role
	cniBindings := map[string]bool{}
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[o.Name] = o
		case *rbacv1.Role:
			role = o
		case *rbacv1.ClusterRoleBinding:
			if o.RoleRef.Name != "cnibench-readonly" {
				t.Errorf("ClusterRoleBinding %s grants %s cluster-wide", o.Name, o.RoleRef.Name)
			}
		case *rbacv1.RoleBinding:
			if o.RoleRef.Kind == "ClusterRole" {
				if o.RoleRef.Name != "cnibench-cni-pods" || o.Name != "cnibench-bench" {
					t.Errorf("RoleBinding %s/%s refers to %+v", o.Namespace, o.Name, o.RoleRef)
				}
				cniBindings[o.Namespace] = true
			}
			if s := o.Subjects; len(s) != 1 || s[0].Namespace != "bench" || s[0].Name != ServiceAccountName {
				t.Errorf("RoleBinding %s/%s subjects %+v", o.Namespace, o.Name, s)
			}
		}
	}
	want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ClusterRole", "RoleBinding", "RoleBinding", "RoleBinding"}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if len(cniBindings) != 3 || !cniBindings["kube-system"] || !cniBindings["cilium"] || !cniBindings["calico-system"] {
		t.Errorf("CNI namespaces bound: %v", cniBindings)
	}
	// Cluster-wide: reads only, and never a namespace.
	ro := clusterRoles["cnibench-readonly"]
	if ro == nil || clusterRoles["cnibench"] != nil {
		t.Fatalf("ClusterRoles %v: want cnibench-readonly and not the full mode's cnibench", slices.Collect(maps.Keys(clusterRoles)))
	}
	for _, cr := range clusterRoles {
		for _, r := range cr.Rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" {
					t.Errorf("ClusterRole %s: verb %s in %+v", cr.Name, v, r)
				}
			}
			if slices.Contains(r.Resources, "namespaces") {
				t.Errorf("ClusterRole %s grants namespaces: %+v", cr.Name, r)
			}
		}
	}
	for _, c := range [][4]string{{"", "nodes", "list", ""}, {"", "configmaps", "get", "kube-proxy"}, {"", "configmaps", "get", "cilium-config"}, {"metrics.k8s.io", "pods", "list", ""}} {
		if !allows(ro.Rules, c[0], c[1], c[2], c[3]) {
			t.Errorf("cnibench-readonly does not allow %v", c)
		}
	}
	if allows(ro.Rules, "", "pods", "list") || allows(ro.Rules, "", "configmaps", "get", "some-other") {
		t.Error("cnibench-readonly allows too much")
	}
	if cp := clusterRoles["cnibench-cni-pods"]; cp == nil || len(cp.Rules) != 2 || !allows(cp.Rules, "", "pods", "list") || !allows(cp.Rules, "", "pods/log", "get") {
		t.Errorf("cnibench-cni-pods: %+v", cp)
	}
	// In the namespace: what the full mode's Role allows, and reading
	// the namespace itself.
	if role == nil || role.Namespace != "bench" || role.Name != "cnibench" {
		t.Fatalf("Role %+v", role)
	}
	for _, c := range [][3]string{{"", "pods", "create"}, {"", "pods/exec", "create"}, {"", "namespaces", "get"}, {"networking.k8s.io", "networkpolicies", "create"}} {
		if !allows(role.Rules, c[0], c[1], c[2]) {
			t.Errorf("Role does not allow %v", c)
		}
	}
	if allows(role.Rules, "", "namespaces", "create") || allows(role.Rules, "", "namespaces", "delete") {
		t.Error("Role lets the namespace be created or deleted")
	}
	// Default CNI namespaces: kube-system, cni.SystemNamespaces and the
	// operators'.
	d := DefaultCNINamespaces()
	for _, ns := range append(slices.Clone(cni.SystemNamespaces), "kube-system", "calico-system", "tigera-operator", "openshift-ovn-kubernetes", "kube-flannel", "cilium") {
		if !slices.Contains(d, ns) {
			t.Errorf("DefaultCNINamespaces %v lacks %s", d, ns)
		}
	}
	if len(d) != len(slices.Compact(slices.Sorted(slices.Values(d)))) {
		t.Errorf("DefaultCNINamespaces has duplicates: %v", d)
	}
}

func TestRBAC(t *testing.T) {
	objs := Objects("bench")
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
	}
	if want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	cr, role := objs[1].(*rbacv1.ClusterRole), objs[3].(*rbacv1.Role)
	for _, c := range [][3]string{{"", "nodes", "list"}, {"", "pods", "list"}, {"", "namespaces", "create"}, {"metrics.k8s.io", "pods", "list"},
		{"cilium.io", "ciliumclusterwidenetworkpolicies", "create"}, {"cilium.io", "ciliumclusterwidenetworkpolicies", "deletecollection"},
		{"crd.projectcalico.org", "globalnetworksets", "create"}, {"crd.projectcalico.org", "globalnetworkpolicies", "delete"},
		{"crd.projectcalico.org", "globalnetworksets", "list"}} {
		if !allows(cr.Rules, c[0], c[1], c[2]) {
			t.Errorf("ClusterRole does not allow %v", c)
		}
	}
	if allows(cr.Rules, "", "pods", "create") || allows(cr.Rules, "", "secrets", "get") || allows(cr.Rules, "cilium.io", "ciliumnetworkpolicies", "create") ||
		allows(cr.Rules, "crd.projectcalico.org", "networkpolicies", "create") || allows(cr.Rules, "networking.k8s.io", "networkpolicies", "create") {
		t.Error("ClusterRole allows too much")
	}
	if !allows(cr.Rules, "", "configmaps", "get", cni.KubeProxyConfigMap) || allows(cr.Rules, "", "configmaps", "get", "other") {
		t.Error("ClusterRole does not read kube-proxy's ConfigMap by name")
	}
	for _, c := range [][3]string{{"", "pods", "create"}, {"", "pods/exec", "create"}, {"", "services", "delete"},
		{"", "secrets", "create"}, {"networking.k8s.io", "networkpolicies", "create"}, {"discovery.k8s.io", "endpointslices", "list"},
		{"", "services", "create"}, {"", "services", "list"}, {"discovery.k8s.io", "endpointslices", "create"},
		{"discovery.k8s.io", "endpointslices", "deletecollection"}, {"networking.k8s.io", "networkpolicies", "delete"}} {
		if !allows(role.Rules, c[0], c[1], c[2]) {
			t.Errorf("Role does not allow %v", c)
		}
	}
	if role.Namespace != "bench" {
		t.Errorf("role namespace %q", role.Namespace)
	}
	for _, o := range []any{objs[2], objs[4]} {
		var s []rbacv1.Subject
		switch b := o.(type) {
		case *rbacv1.ClusterRoleBinding:
			s = b.Subjects
		case *rbacv1.RoleBinding:
			s = b.Subjects
		}
		if len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Name != ServiceAccountName || s[0].Namespace != "bench" {
			t.Errorf("subjects %+v", s)
		}
	}
}
