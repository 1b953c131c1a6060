package kube

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestRBACYAML(t *testing.T) {
	got, err := RBACYAML("bench")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "rbac.golden")
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
		t.Errorf("RBACYAML differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
	// Every document parses, and is commented.
	docs := strings.Split(string(got), "---\n")[1:]
	if len(docs) != 5 {
		t.Fatalf("%d documents", len(docs))
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
}

func TestRBAC(t *testing.T) {
	objs := RBAC("bench")
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
	}
	if want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	allows := func(rules []rbacv1.PolicyRule, group, res, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
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
