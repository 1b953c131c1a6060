package kube

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// ServiceAccountName is the service account RBAC grants cnibench's rights
// to.
const ServiceAccountName = "cnibench"

// rbacLabels label the RBAC objects. They are installed by an
// administrator, not by a run, so they do not carry ManagedByKey: Clean
// leaves them alone.
var rbacLabels = map[string]string{"app.kubernetes.io/part-of": "cnibench"}

// ruleWhy is an RBAC rule and why cnibench needs it.
type ruleWhy struct {
	rule rbacv1.PolicyRule
	why  string
}

func rule(group, resource string, verbs []string, why string) ruleWhy {
	return ruleWhy{rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}, why}
}

// clusterRules are the rights cnibench needs across the cluster.
var clusterRules = []ruleWhy{
	rule("", "nodes", []string{"get", "list"}, "choose the client and server nodes and read their addresses"),
	rule("", "pods", []string{"list"}, "identify the CNI and its pods (kube-system and the CNIs' own namespaces, or --cni-pods) for the CNI check and the footprint"),
	rule("", "namespaces", []string{"get", "list", "create", "delete"}, "create a run's namespace, delete it afterwards and find those of crashed runs (optional: not needed when the runs use an existing namespace, such as this one)"),
	ruleWhy{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: modeConfigMaps()},
		"read the CNI's own configuration (these ConfigMaps only) to name its mode in the CNI check and the runs' labels"},
	rule("metrics.k8s.io", "pods", []string{"get", "list"}, "read the CPU and memory of CNI pods on nodes without a run's host pod (metrics-server; optional)"),
	rule("cilium.io", "ciliumclusterwidenetworkpolicies", clusterPolicyVerbs, "used only by the egress-filter scenario's cilium-policy mechanism, when the cluster serves them (Cilium), and by cnibench k8s clean to remove those of crashed runs (optional)"),
	ruleWhy{rbacv1.PolicyRule{APIGroups: []string{"crd.projectcalico.org"}, Resources: []string{"globalnetworksets", "globalnetworkpolicies"}, Verbs: clusterPolicyVerbs},
		"used only by the egress-filter scenario's calico-networkset mechanism, when the cluster serves them (Calico), and by cnibench k8s clean to remove those of crashed runs (optional)"},
}

// clusterPolicyVerbs are the verbs cnibench needs on the CNIs' cluster-wide
// policy objects.
var clusterPolicyVerbs = []string{"get", "list", "create", "delete", "deletecollection"}

// namespaceRules are the rights cnibench needs in the run's namespace.
var namespaceRules = []ruleWhy{
	rule("", "pods", []string{"create", "get", "list", "watch", "delete"}, "run the server, client and privileged host-network pods, wait for them and remove them"),
	rule("", "pods/exec", []string{"create", "get"}, "run `cnibench run` and the probes (inspect, connect, capture, cgroup) in the run's pods (create: SPDY and newer API servers; get: WebSocket on older ones)"),
	rule("", "services", []string{"create", "get", "list", "delete"}, "measure through a ClusterIP service (pod-to-service, hairpin), and through the services scenario's many selectorless services"),
	rule("", "secrets", []string{"create", "get", "list", "delete"}, "hand the run's token to the server and client pods"),
	rule("networking.k8s.io", "networkpolicies", []string{"create", "get", "list", "update", "delete"}, "test whether NetworkPolicy is enforced (ingress deny, allow list, egress deny), and the egress-filter scenario's networkpolicy mechanism (egress allowed except the deny CIDRs)"),
	rule("discovery.k8s.io", "endpointslices", []string{"create", "get", "list", "watch", "delete", "deletecollection"}, "wait until the services have ready endpoints; the services scenario gives each of its selectorless services one and removes them"),
}

// rbacDoc is an RBAC object and the comment lines that explain it.
type rbacDoc struct {
	obj     runtime.Object
	comment []string
}

func rules(rs []ruleWhy) ([]rbacv1.PolicyRule, []string) {
	var out []rbacv1.PolicyRule
	var why []string
	for _, r := range rs {
		out = append(out, r.rule)
		g := r.rule.APIGroups[0]
		if g == "" {
			g = "core"
		}
		why = append(why, fmt.Sprintf("- %s %s (%s): %s", strings.Join(r.rule.Resources, ","), strings.Join(r.rule.Verbs, ","), g, r.why))
	}
	return out, why
}

func rbacDocs(namespace string) []rbacDoc {
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: rbacLabels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: namespace}}
	cRules, cWhy := rules(clusterRules)
	nRules, nWhy := rules(namespaceRules)
	bindingName := "cnibench-" + namespace
	return []rbacDoc{
		{&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(ServiceAccountName, namespace),
		}, []string{"The identity cnibench runs as (in-cluster, or via a token of this account)."}},
		{&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: meta("cnibench", ""),
			Rules:      cRules,
		}, append([]string{"Cluster-wide rights (read-only, but for the namespaces of runs and the CNIs' cluster-wide policy objects):"}, cWhy...)},
		{&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(bindingName, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cnibench"},
			Subjects:   subject,
		}, []string{"Grants the ClusterRole cnibench to the service account " + namespace + "/" + ServiceAccountName + "."}},
		{&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta("cnibench", namespace),
			Rules:      nRules,
		}, append([]string{"Rights in the namespace " + namespace + ", where the runs' objects live (cleaning other namespaces needs the same rights there):"}, nWhy...)},
		{&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta("cnibench", namespace),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cnibench"},
			Subjects:   subject,
		}, []string{"Grants the Role cnibench to the service account " + namespace + "/" + ServiceAccountName + "."}},
	}
}

// RBAC returns the least rights cnibench needs to benchmark a cluster with
// its objects in namespace: the ServiceAccount ServiceAccountName there, a
// ClusterRole (nodes get/list; pods list in every namespace, to identify
// the CNI; namespaces get/list/create/delete, not needed when the
// namespace exists beforehand; metrics.k8s.io pods get/list; Cilium's
// ciliumclusterwidenetworkpolicies and Calico's globalnetworksets and
// globalnetworkpolicies, for the egress-filter scenario where the cluster
// serves them) with its ClusterRoleBinding, and a Role in namespace (pods,
// pods/exec, services, secrets, networkpolicies, endpointslices) with its
// RoleBinding.
func RBAC(namespace string) []runtime.Object {
	docs := rbacDocs(namespace)
	out := make([]runtime.Object, len(docs))
	for i, d := range docs {
		out[i] = d.obj
	}
	return out
}

// RBACYAML renders RBAC(namespace) as a multi-document YAML, for kubectl
// apply -f, each object preceded by comments that explain why each of its
// rules is needed.
func RBACYAML(namespace string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# RBAC for cnibench with its objects in namespace %s, which must exist: kubectl create namespace %s; kubectl apply -f THIS-FILE.\n", namespace, namespace)
	for _, d := range rbacDocs(namespace) {
		y, err := yaml.Marshal(d.obj)
		if err != nil {
			return nil, fmt.Errorf("render %T as YAML: %w", d.obj, err)
		}
		b.WriteString("---\n")
		for _, c := range d.comment {
			b.WriteString("# " + c + "\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
