package cni

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube"
)

// SystemNamespaces are where ListSystemPods looks for the CNI's pods:
// kube-system and the namespaces that some CNIs' installers use
// (calico-system: Calico's operator install), besides
// operatorNamespaces.
var SystemNamespaces = []string{"kube-system", "kube-flannel", "calico-system", "cilium", "ovn-kubernetes", "kube-ovn"}

// operatorNamespaces are further namespaces of CNIs' pods that
// ListSystemPods lists: OVN-Kubernetes on OpenShift. (rbac's
// DefaultCNINamespaces names them in the RBAC.)
var operatorNamespaces = []string{"openshift-ovn-kubernetes", "tigera-operator"}

// PodRef identifies a pod of the CNI.
type PodRef struct {
	// Namespace and Name of the pod.
	Namespace, Name string
	// Node the pod runs on.
	Node string
	// UID of the pod, which tells a restarted pod of the same name apart.
	UID types.UID
}

// Info is what Identify found out about the cluster's CNI.
type Info struct {
	// Name of the CNI ("cilium", "calico", …; the main plugin type of the
	// CNI configuration, such as "bridge", when no known CNI's pods run;
	// "unknown" if there is nothing to go by).
	Name string
	// Version is the tag of the CNI's image ("" if unknown).
	Version string
	// Mode is how the CNI is configured to carry pod traffic, as its own
	// configuration says: flannel's backend ("vxlan", "host-gw",
	// "vxlan+directrouting", …), cilium's routing, kube-proxy replacement
	// and host routing ("tunnel vxlan, kube-proxy replacement, eBPF host
	// routing"); "" if unknown. DetectMode fills it.
	Mode string
	// Settings are the settings of the CNI's configuration that Mode was
	// read from, by key (nil if no configuration was read).
	Settings map[string]string
	// Evidence are the facts the identification rests on, one per line.
	Evidence []string
	// Pods are the pods of the CNI (none for a CNI of plugin binaries
	// only), sorted by namespace and name.
	Pods []PodRef
	// agent is the environment of the CNI agent's main container in its
	// first pod (calico-node's, for Calico and Canal), where a manifest
	// install keeps the mode; DetectMode reads it.
	agent *agentEnv
}

// agentEnv is a container's environment as its pod spec gives it.
type agentEnv struct {
	pod string // namespace/name
	env []corev1.EnvVar
}

// agentContainers name the container whose environment holds a CNI's
// mode.
var agentContainers = map[string]string{"calico": "calico-node", "canal": "calico-node"}

// cniSig is how a known CNI shows in the pods of a cluster.
type cniSig struct {
	name string
	// meta plugins (multus) delegate to the real CNI.
	meta bool
	// podPrefixes are prefixes of the names of its pods.
	podPrefixes []string
	// labels are pod labels ("key=value") of its pods.
	labels []string
	// images are image repositories (path suffixes, without registry or
	// tag) of its containers.
	images []string
	// versionFrom are the images whose tag is the version (default
	// images).
	versionFrom []string
	// confTypes are the plugin types of its CNI configuration.
	confTypes []string
	// together are containers that make one of its pods when all of them
	// are in one pod, each a container name or an image path suffix
	// (canal: calico-node and kube-flannel side by side).
	together []string
	// note is said in the evidence when one of its pods is named with
	// a prefix of notePrefixes (GKE's anetd is Cilium).
	notePrefixes []string
	note         string
}

// knownCNIs, by precedence: canal's pods carry calico and flannel images.
//
// Managed clusters' CNIs: Amazon VPC CNI (EKS, DaemonSet aws-node), Azure
// CNI (AKS, azure-cns; azure-ip-masq-agent is not used, since kubenet
// clusters run it too), GKE Dataplane V2 (anetd, GKE's build of Cilium:
// named cilium), Calico's operator install (calico-system), OVN-Kubernetes
// on OpenShift (openshift-ovn-kubernetes).
var knownCNIs = []cniSig{
	{name: "canal", podPrefixes: []string{"canal-", "rke2-canal-"}, labels: []string{"k8s-app=canal"}, versionFrom: []string{"calico/node", "hardened-calico"},
		together: []string{"calico-node", "kube-flannel"}},
	{name: "cilium", podPrefixes: []string{"cilium-", "anetd-"}, labels: []string{"k8s-app=cilium", "app.kubernetes.io/part-of=cilium"},
		images: []string{"cilium/cilium", "cilium/operator", "cilium/operator-generic"}, versionFrom: []string{"cilium/cilium"}, confTypes: []string{"cilium-cni"},
		notePrefixes: []string{"anetd-"}, note: "GKE Dataplane V2 (anetd, GKE's build of Cilium)"},
	{name: "aws-vpc-cni", podPrefixes: []string{"aws-node-"}, labels: []string{"k8s-app=aws-node", "app.kubernetes.io/name=aws-node"},
		images: []string{"amazon-k8s-cni", "amazon-k8s-cni-init"}, versionFrom: []string{"amazon-k8s-cni"}, confTypes: []string{"aws-cni"}},
	{name: "azure-cni", podPrefixes: []string{"azure-cns-"}, labels: []string{"k8s-app=azure-cns"},
		images: []string{"containernetworking/azure-cns", "azure-cns"}, confTypes: []string{"azure-vnet"}},
	{name: "calico", podPrefixes: []string{"calico-node-", "calico-typha-", "calico-kube-controllers-"},
		labels: []string{"k8s-app=calico-node", "k8s-app=calico-typha", "k8s-app=calico-kube-controllers"},
		images: []string{"calico/node", "calico/typha", "calico/kube-controllers", "calico/cni"}, versionFrom: []string{"calico/node"}, confTypes: []string{"calico"}},
	{name: "flannel", podPrefixes: []string{"kube-flannel-"}, labels: []string{"app=flannel", "k8s-app=flannel"},
		images: []string{"flannel/flannel", "flannel-io/flannel", "flannelcni/flannel", "coreos/flannel"}, confTypes: []string{"flannel"}},
	{name: "weave-net", podPrefixes: []string{"weave-net-"}, labels: []string{"name=weave-net"},
		images: []string{"weaveworks/weave-kube", "weave-kube"}, confTypes: []string{"weave-net"}},
	{name: "antrea", podPrefixes: []string{"antrea-agent-", "antrea-controller-"}, labels: []string{"app=antrea"},
		images: []string{"antrea/antrea-agent-ubuntu", "antrea/antrea-controller-ubuntu", "antrea/antrea-ubuntu"}, confTypes: []string{"antrea"}},
	{name: "kube-router", podPrefixes: []string{"kube-router-"}, labels: []string{"k8s-app=kube-router"},
		images: []string{"cloudnativelabs/kube-router"}},
	{name: "kindnet", podPrefixes: []string{"kindnet-"}, labels: []string{"app=kindnet"},
		images: []string{"kindest/kindnetd", "kindnetd"}},
	{name: "ovn-kubernetes", podPrefixes: []string{"ovnkube-node-", "ovnkube-master-", "ovnkube-control-plane-", "ovnkube-db-"}, labels: []string{"app=ovnkube-node"},
		images: []string{"ovn-kubernetes/ovn-kube", "ovn-kube-ubuntu", "ovn-kube-fedora", "ovn-daemonset"}, confTypes: []string{"ovn-k8s-cni-overlay"}},
	{name: "multus", meta: true, podPrefixes: []string{"kube-multus-", "multus-"}, labels: []string{"app=multus", "name=multus"},
		images: []string{"multus-cni", "k8snetworkplumbingwg/multus-cni"}, confTypes: []string{"multus", "multus-shim"}},
}

// ListSystemPods lists the pods of SystemNamespaces and
// operatorNamespaces (a namespace that does not exist has none).
func ListSystemPods(ctx context.Context, cs kubernetes.Interface) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, ns := range append(slices.Clone(SystemNamespaces), operatorNamespaces...) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if apierrors.IsForbidden(err) && ns != "kube-system" {
			// A least-privilege account (cnibench k8s rbac
			// --existing-namespace) may read only the CNI namespaces
			// it was given.
			kube.Logger(ctx).Debug("pods not listed", "namespace", ns, "err", err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list pods in namespace %s: %w", ns, err)
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

// PodsBySelector lists the pods that spec, "namespace/selector" or
// "selector" (namespace kube-system), selects: the user's way to name the
// CNI's pods. A selector's key may have a prefix with a dot
// ("kube-system/app.kubernetes.io/name=cilium"); "a/b=c" means namespace a.
func PodsBySelector(ctx context.Context, cs kubernetes.Interface, spec string) ([]corev1.Pod, error) {
	ns, sel := "kube-system", spec
	if i := strings.IndexByte(spec, '/'); i > 0 && len(validation.IsDNS1123Label(spec[:i])) == 0 {
		ns, sel = spec[:i], spec[i+1:]
	}
	if sel == "" {
		return nil, fmt.Errorf("CNI pods %q: want namespace/label=value: invalid selector: empty", spec)
	}
	if _, err := labels.Parse(sel); err != nil {
		return nil, fmt.Errorf("CNI pods %q: want namespace/label=value: invalid selector: %w", spec, err)
	}
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list pods %s in namespace %s: %w", sel, ns, err)
	}
	if len(l.Items) == 0 {
		return nil, fmt.Errorf("CNI pods %q: no pod in namespace %s matches %s", spec, ns, sel)
	}
	return l.Items, nil
}

// PodRefs returns the references of pods, sorted by namespace and name.
func PodRefs(pods []corev1.Pod) []PodRef {
	out := make([]PodRef, 0, len(pods))
	for _, p := range pods {
		out = append(out, PodRef{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, UID: p.UID})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// imagePath returns the repository path of image ref, without registry,
// tag or digest, and its tag ("" if none).
func imagePath(ref string) (path, tag string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref, tag = ref[:i], ref[i+1:]
	}
	if i := strings.IndexByte(ref, '/'); i >= 0 {
		if host := ref[:i]; strings.ContainsAny(host, ".:") || host == "localhost" {
			ref = ref[i+1:]
		}
	}
	return ref, tag
}

// imageIs tells whether repository path matches pattern (a path suffix).
func imageIs(path, pattern string) bool {
	return path == pattern || strings.HasSuffix(path, "/"+pattern)
}

// podImages returns the images of p's containers, init containers first.
func podImages(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range p.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

// matchPod returns why p is one of sig's pods ("" if it is not).
func matchPod(sig *cniSig, p *corev1.Pod) string {
	if len(sig.together) > 0 && hasAll(p, sig.together) {
		return "containers " + strings.Join(sig.together, " + ") + " in one pod"
	}
	for _, img := range podImages(p) {
		path, _ := imagePath(img)
		for _, pat := range sig.images {
			if imageIs(path, pat) {
				return "image " + img
			}
		}
	}
	for _, l := range sig.labels {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels[k] == v {
			return "label " + l
		}
	}
	for _, pre := range sig.podPrefixes {
		if strings.HasPrefix(p.Name, pre) {
			return "pod name " + pre + "*"
		}
	}
	return ""
}

// hasAll tells whether p has a container for each of pats (a container
// name or an image path suffix).
func hasAll(p *corev1.Pod, pats []string) bool {
	cs := append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...)
	for _, pat := range pats {
		if !slices.ContainsFunc(cs, func(c corev1.Container) bool {
			path, _ := imagePath(c.Image)
			return c.Name == pat || imageIs(path, pat)
		}) {
			return false
		}
	}
	return true
}

// cniMatch is a known CNI's pods among the system pods.
type cniMatch struct {
	sig     *cniSig
	pods    []corev1.Pod
	reasons []string            // in order of first appearance
	byWhy   map[string][]string // reason → pods (ns/name)
}

// Identify tells the cluster's CNI from its system pods (names, labels
// and container images, matched against the known CNIs: cilium (GKE
// Dataplane V2's anetd included), calico, canal, aws-vpc-cni, azure-cni,
// flannel, weave-net, antrea, kube-router, kindnet, ovn-kubernetes, and
// multus, a meta-plugin that delegates to another), and from
// confPlugins, the plugin types of a node's CNI configuration, main plugin
// first (nil if unknown). When no known CNI's pods run, the CNI is the
// main plugin of the configuration (e.g. "bridge"). DetectMode then
// reads the CNI's mode from the cluster.
func Identify(pods []corev1.Pod, confPlugins []string) Info {
	pods = append([]corev1.Pod(nil), pods...)
	sort.SliceStable(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	matches := make([]*cniMatch, len(knownCNIs))
	for i := range pods {
		p := &pods[i]
		for k := range knownCNIs {
			why := matchPod(&knownCNIs[k], p)
			if why == "" {
				continue
			}
			m := matches[k]
			if m == nil {
				m = &cniMatch{sig: &knownCNIs[k], byWhy: map[string][]string{}}
				matches[k] = m
			}
			m.pods = append(m.pods, *p)
			if _, ok := m.byWhy[why]; !ok {
				m.reasons = append(m.reasons, why)
			}
			m.byWhy[why] = append(m.byWhy[why], p.Namespace+"/"+p.Name)
			break
		}
	}
	var primary, meta *cniMatch
	var others []string
	for _, m := range matches {
		switch {
		case m == nil:
		case m.sig.meta:
			meta = m
		case primary == nil:
			primary = m
		default:
			others = append(others, fmt.Sprintf("%s (%d pods)", m.sig.name, len(m.pods)))
		}
	}
	if primary == nil {
		primary, meta = meta, nil
	}
	var info Info
	conf := ""
	if len(confPlugins) > 0 {
		conf = "CNI config: plugins " + strings.Join(confPlugins, ",")
	}
	if primary == nil {
		info.Name = "unknown"
		if len(confPlugins) > 0 {
			info.Name = confPlugins[0]
			for _, s := range knownCNIs {
				for _, t := range s.confTypes {
					if t == confPlugins[0] {
						info.Name = s.name
					}
				}
			}
			info.Evidence = append(info.Evidence, conf)
		}
		what := "no CNI pods among the %d system pods: the CNI runs as plugin binaries only"
		if len(confPlugins) == 0 {
			what = "no CNI pods among the %d system pods, and no CNI config read"
		}
		info.Evidence = append(info.Evidence, fmt.Sprintf(what, len(pods)))
		return info
	}
	info.Name = primary.sig.name
	info.Version = version(primary)
	info.Evidence = evidence(primary)
	if note := noteOf(primary); note != "" {
		info.Evidence = append(info.Evidence, note)
	}
	if meta != nil {
		info.Evidence = append(info.Evidence, fmt.Sprintf("meta-plugin %s (%d pods) delegates to %s", meta.sig.name, len(meta.pods), info.Name))
	}
	if len(others) > 0 {
		info.Evidence = append(info.Evidence, "also found: "+strings.Join(others, ", "))
	}
	if conf != "" {
		info.Evidence = append(info.Evidence, conf)
	}
	info.Pods = PodRefs(primary.pods)
	info.agent = findAgentEnv(primary.pods, agentContainers[info.Name])
	return info
}

// findAgentEnv is the environment of the first of pods (in name order)
// with a container named name (nil if none, or name is "").
func findAgentEnv(pods []corev1.Pod, name string) *agentEnv {
	if name == "" {
		return nil
	}
	for i := range pods {
		for _, c := range pods[i].Spec.Containers {
			if c.Name == name {
				return &agentEnv{pod: pods[i].Namespace + "/" + pods[i].Name, env: c.Env}
			}
		}
	}
	return nil
}

// evidence describes m's pods, one line per reason, naming at most three.
func evidence(m *cniMatch) []string {
	var out []string
	for _, why := range m.reasons {
		names := m.byWhy[why]
		list := strings.Join(names[:min(3, len(names))], ", ")
		if len(names) > 3 {
			list += ", …"
		}
		noun := "pods"
		if len(names) == 1 {
			noun = "pod"
		}
		out = append(out, fmt.Sprintf("%s: %d %s %s (%s)", m.sig.name, len(names), noun, list, why))
	}
	return out
}

// noteOf is m's note when one of its pods has a name of its notePrefixes.
func noteOf(m *cniMatch) string {
	for i := range m.pods {
		for _, pre := range m.sig.notePrefixes {
			if strings.HasPrefix(m.pods[i].Name, pre) {
				return m.sig.note
			}
		}
	}
	return ""
}

// version is the tag of the first image of m's pods that names the
// version.
func version(m *cniMatch) string {
	from := m.sig.versionFrom
	if from == nil {
		from = m.sig.images
	}
	for i := range m.pods {
		for _, img := range podImages(&m.pods[i]) {
			path, tag := imagePath(img)
			for _, pat := range from {
				if imageIs(path, pat) && tag != "" {
					return tag
				}
			}
		}
	}
	return ""
}
