package rbac

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/cnibench/cnibench/internal/kube/cni"
)

// ServiceAccountName is the service account RBAC grants cnibench's rights
// to.
const ServiceAccountName = "cnibench"

// rbacLabels label the RBAC objects. They are installed by an
// administrator, not by a run, so they do not carry kube.ManagedByKey:
// kube.Clean leaves them alone.
var rbacLabels = map[string]string{"app.kubernetes.io/part-of": "cnibench"}

// Mode selects the rights For grants.
type Mode int

const (
	// Full lets a run create its namespace and delete it afterwards,
	// list pods in every namespace and create the CNIs' cluster-wide
	// policy objects of the egress-filter scenario.
	Full Mode = iota
	// ExistingNamespace is the least-privilege mode for a namespace
	// that exists beforehand: the namespaced rights in a Role of that
	// namespace only, pods list in the CNIs' namespaces only, and
	// cluster-wide nothing but reads (nodes, the CNIs' and kube-proxy's
	// ConfigMaps by name, metrics). No namespace can be created or
	// deleted, and the egress-filter scenario's cilium-policy and
	// calico-networkset mechanisms (cluster-scoped objects) cannot run.
	ExistingNamespace
)

// String returns the mode's name as the CLI spells it.
func (m Mode) String() string {
	if m == ExistingNamespace {
		return "existing-namespace"
	}
	return "full"
}

// DefaultCNINamespaces are the namespaces whose pods ExistingNamespace
// lets cnibench list to identify the CNI: kube-system, cni.SystemNamespaces
// and the namespaces of the operators' installs (Calico's tigera-operator,
// OpenShift's OVN-Kubernetes).
func DefaultCNINamespaces() []string {
	out := []string{"kube-system"}
	for _, ns := range append(slices.Clone(cni.SystemNamespaces), "calico-system", "tigera-operator", "openshift-ovn-kubernetes", "kube-flannel", "cilium") {
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// Options says which RBAC For renders.
type Options struct {
	// Namespace holds the runs' objects and the ServiceAccount.
	Namespace string
	// Mode is Full or ExistingNamespace.
	Mode Mode
	// CNINamespaces are the namespaces where ExistingNamespace grants
	// pods list (nil: DefaultCNINamespaces). Each must exist when the
	// RBAC is applied. Full lists pods in every namespace and
	// ignores them.
	CNINamespaces []string
}

// ValidateNamespaceName returns an error of one line if name is not a
// valid namespace name (an RFC 1123 label).
func ValidateNamespaceName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid namespace name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Validate checks o: the namespace names, and the mode.
func (o Options) Validate() error {
	if err := ValidateNamespaceName(o.Namespace); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	for _, ns := range o.CNINamespaces {
		if err := ValidateNamespaceName(ns); err != nil {
			return fmt.Errorf("CNI namespaces: %w", err)
		}
	}
	if o.Mode != Full && o.Mode != ExistingNamespace {
		return fmt.Errorf("RBAC mode %d: unknown (want full or existing-namespace)", o.Mode)
	}
	return nil
}

func (o Options) cniNamespaces() []string {
	if o.CNINamespaces == nil {
		return DefaultCNINamespaces()
	}
	return o.CNINamespaces
}

// ruleWhy is an RBAC rule and why cnibench needs it.
type ruleWhy struct {
	rule rbacv1.PolicyRule
	why  string
}

func rule(group, resource string, verbs []string, why string) ruleWhy {
	return ruleWhy{rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}, why}
}

var (
	nodesRule      = rule("", "nodes", []string{"get", "list"}, "choose the client and server nodes and read their addresses")
	configMapsRule = ruleWhy{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: cni.ConfigMaps()},
		"read the CNI's own configuration and kube-proxy's (kube-system/kube-proxy) (these ConfigMaps only) to name the CNI's and kube-proxy's modes in the CNI check and the runs' labels"}
	metricsRule  = rule("metrics.k8s.io", "pods", []string{"get", "list"}, "read the CPU and memory of CNI pods on nodes without a run's host pod (metrics-server; optional)")
	podsListRule = rule("", "pods", []string{"list"}, "identify the CNI and its pods (kube-system and the CNIs' own namespaces, or --cni-pods) for the CNI check and the footprint")
	podsLogRule  = rule("", "pods/log", []string{"get"}, "read the CNI pods' warning and error lines when a scenario's point fails, as its evidence (optional)")
)

// clusterRules are the rights cnibench needs across the cluster.
var clusterRules = []ruleWhy{
	nodesRule,
	podsListRule,
	podsLogRule,
	rule("", "namespaces", []string{"get", "list", "create", "delete"}, "create a run's namespace, delete it afterwards and find those of crashed runs (not needed when the runs use an existing namespace: see cnibench k8s rbac --existing-namespace)"),
	configMapsRule,
	metricsRule,
	rule("cilium.io", "ciliumclusterwidenetworkpolicies", clusterPolicyVerbs, "used only by the egress-filter scenario's cilium-policy mechanism, when the cluster serves them (Cilium), and by cnibench k8s clean to remove those of crashed runs (optional)"),
	{rbacv1.PolicyRule{APIGroups: []string{"crd.projectcalico.org"}, Resources: []string{"globalnetworksets", "globalnetworkpolicies"}, Verbs: clusterPolicyVerbs},
		"used only by the egress-filter scenario's calico-networkset mechanism, when the cluster serves them (Calico), and by cnibench k8s clean to remove those of crashed runs (optional)"},
}

// readOnlyClusterRules are ExistingNamespace's cluster-wide rights:
// reads only.
var readOnlyClusterRules = []ruleWhy{nodesRule, configMapsRule, metricsRule}

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

// ownNamespaceRule lets a Role read its own namespace (the API server
// authorizes GET /api/v1/namespaces/NS in namespace NS).
var ownNamespaceRule = rule("", "namespaces", []string{"get"}, "see that the namespace exists (the run then neither creates nor deletes it) and read its Pod Security labels for the preflight (this namespace only)")

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

func rbacMeta(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: rbacLabels}
}

func serviceAccountDoc(namespace string) rbacDoc {
	return rbacDoc{&corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: rbacMeta(ServiceAccountName, namespace),
	}, []string{"The identity cnibench runs as (in-cluster, or via a token of this account)."}}
}

func clusterRoleDoc(name string, rs []ruleWhy, comment string) rbacDoc {
	r, why := rules(rs)
	return rbacDoc{&rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: rbacMeta(name, ""),
		Rules:      r,
	}, append([]string{comment}, why...)}
}

func roleDoc(name, ns string, rs []ruleWhy, comment string) rbacDoc {
	r, why := rules(rs)
	return rbacDoc{&rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: rbacMeta(name, ns),
		Rules:      r,
	}, append([]string{comment}, why...)}
}

func subjects(namespace string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: namespace}}
}

func clusterRoleBindingDoc(name, role, namespace string) rbacDoc {
	return rbacDoc{&rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: rbacMeta(name, ""),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects(namespace),
	}, []string{"Grants the ClusterRole " + role + " to the service account " + namespace + "/" + ServiceAccountName + "."}}
}

// roleBindingDoc binds the Role (or, with clusterRole, the ClusterRole,
// within ns only) role to namespace's ServiceAccount.
func roleBindingDoc(name, ns, role string, clusterRole bool, namespace string) rbacDoc {
	kind, what := "Role", "the Role "+role
	if clusterRole {
		kind, what = "ClusterRole", "the ClusterRole "+role+", in the namespace "+ns+" only,"
	}
	return rbacDoc{&rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: rbacMeta(name, ns),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   subjects(namespace),
	}, []string{"Grants " + what + " to the service account " + namespace + "/" + ServiceAccountName + "."}}
}

// Names of the ExistingNamespace objects. They differ from Full's
// ClusterRole "cnibench", which other namespaces' bindings may share, so
// that applying one mode never changes the other's rights.
const (
	readOnlyClusterRole = "cnibench-readonly"
	cniPodsClusterRole  = "cnibench-cni-pods"
)

func rbacDocs(o Options) []rbacDoc {
	ns := o.Namespace
	bindingName := "cnibench-" + ns
	nsComment := "Rights in the namespace " + ns + ", where the runs' objects live (cleaning other namespaces needs the same rights there):"
	if o.Mode == Full {
		return []rbacDoc{
			serviceAccountDoc(ns),
			clusterRoleDoc("cnibench", clusterRules, "Cluster-wide rights (read-only, but for the namespaces of runs and the CNIs' cluster-wide policy objects):"),
			clusterRoleBindingDoc(bindingName, "cnibench", ns),
			roleDoc("cnibench", ns, namespaceRules, nsComment),
			roleBindingDoc("cnibench", ns, "cnibench", false, ns),
		}
	}
	docs := []rbacDoc{
		serviceAccountDoc(ns),
		clusterRoleDoc(readOnlyClusterRole, readOnlyClusterRules, "Cluster-wide rights, read-only (no namespace is created or deleted; the egress-filter scenario's cilium-policy and calico-networkset mechanisms, which create cluster-scoped objects, are not granted):"),
		clusterRoleBindingDoc(bindingName, readOnlyClusterRole, ns),
		roleDoc("cnibench", ns, append(slices.Clone(namespaceRules), ownNamespaceRule), nsComment),
		roleBindingDoc("cnibench", ns, "cnibench", false, ns),
		clusterRoleDoc(cniPodsClusterRole, []ruleWhy{podsListRule, podsLogRule},
			"Pods list and logs, granted only by the RoleBindings below, in the CNIs' namespaces (a ClusterRole so that one definition serves them all; it grants nothing cluster-wide). --cni-pods in another namespace needs that namespace in --cni-namespaces."),
	}
	for _, cns := range o.cniNamespaces() {
		docs = append(docs, roleBindingDoc(bindingName, cns, cniPodsClusterRole, true, ns))
	}
	return docs
}

// Objects returns the rights cnibench needs (Full) to benchmark a cluster
// with its objects in namespace: the ServiceAccount ServiceAccountName
// there, a ClusterRole (nodes get/list; pods list in every namespace, to
// identify the CNI; namespaces get/list/create/delete; the CNIs' and
// kube-proxy's ConfigMaps get, by name; metrics.k8s.io pods get/list;
// Cilium's ciliumclusterwidenetworkpolicies and Calico's globalnetworksets
// and globalnetworkpolicies, for the egress-filter scenario where the
// cluster serves them) with its ClusterRoleBinding, and a Role in
// namespace (pods, pods/exec, services, secrets, networkpolicies,
// endpointslices) with its RoleBinding. It does not validate namespace
// (For does).
func Objects(namespace string) []runtime.Object {
	return objectsOf(rbacDocs(Options{Namespace: namespace}))
}

// For returns the RBAC objects of o, in the order to apply them.
func For(o Options) ([]runtime.Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return objectsOf(rbacDocs(o)), nil
}

func objectsOf(docs []rbacDoc) []runtime.Object {
	out := make([]runtime.Object, len(docs))
	for i, d := range docs {
		out[i] = d.obj
	}
	return out
}

// YAML renders Objects(namespace) as a multi-document YAML (see
// YAMLFor).
func YAML(namespace string) ([]byte, error) {
	return YAMLFor(Options{Namespace: namespace})
}

// YAMLFor renders the RBAC of o as a multi-document YAML, for kubectl
// apply -f: a header of comments (how to apply it, the Pod Security
// labels the namespace needs), then each object preceded by comments that
// explain why each of its rules is needed.
func YAMLFor(o Options) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, l := range rbacHeader(o) {
		b.WriteString("# " + l + "\n")
	}
	for _, d := range rbacDocs(o) {
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

// rbacHeader is the comment block that opens YAMLFor's output.
func rbacHeader(o Options) []string {
	ns := o.Namespace
	var h []string
	if o.Mode == Full {
		h = append(h, fmt.Sprintf("RBAC for cnibench with its objects in namespace %s, which must exist: kubectl create namespace %s; kubectl apply -f THIS-FILE.", ns, ns))
	} else {
		h = append(h,
			fmt.Sprintf("Least-privilege RBAC for cnibench in the existing namespace %s: kubectl create namespace %s; kubectl apply -f THIS-FILE.", ns, ns),
			"Cluster-wide it grants reads only; the runs neither create nor delete namespaces. Not granted, so not available:",
			"the egress-filter scenario's cilium-policy and calico-networkset mechanisms (cluster-scoped objects), and",
			"cnibench k8s clean of other namespaces. Pods are listed only in "+strings.Join(o.cniNamespaces(), ", ")+";",
			"each must exist when this is applied (kubectl reports \"namespaces ... not found\" for the others:",
			"print only those the cluster has with --cni-namespaces).")
	}
	h = append(h,
		"Pod Security admission: the namespace's labels decide which pods it admits.",
		"- The full run (the host-network baseline, the mtu, cni, encryption and cni_footprint checks) needs",
		"  privileged hostNetwork pods with hostPath mounts: kubectl label namespace "+ns+" pod-security.kubernetes.io/enforce=privileged",
		"- enforce=restricted (or baseline) admits only the pod-network paths: cnibench suite --backend kubernetes",
		"  --namespace "+ns+" --checks none --no-host-pods. Then skipped: the host-network (node-to-node) baseline, every",
		"  check (cni, mtu, network_policy, encryption, cni_footprint), and the egress-filter scenario's raw",
		"  mechanisms (pods with NET_ADMIN and BPF).")
	return h
}
