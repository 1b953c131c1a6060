package cni

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// sysPod is a pod of namespace ns on node n1 with labels l ("k=v", …)
// and containers of images.
func sysPod(ns, name string, l []string, images ...string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: "n1"},
	}
	for _, kv := range l {
		k, v, _ := strings.Cut(kv, "=")
		p.Labels[k] = v
	}
	for _, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Image: img})
	}
	return p
}

var (
	coredns      = sysPod("kube-system", "coredns-5d78c9869d-abcde", []string{"k8s-app=kube-dns"}, "registry.k8s.io/coredns/coredns:v1.11.1")
	kubeProxy    = sysPod("kube-system", "kube-proxy-xyz12", []string{"k8s-app=kube-proxy"}, "registry.k8s.io/kube-proxy:v1.31.0")
	cilium1      = sysPod("kube-system", "cilium-4xk2p", []string{"k8s-app=cilium"}, "quay.io/cilium/cilium:v1.16.3@sha256:62d2a09bbef840a46099ac4c69421c90f84f28d018d479749049011329aa7f28")
	cilium2      = sysPod("kube-system", "cilium-9zt7q", []string{"k8s-app=cilium"}, "quay.io/cilium/cilium:v1.16.3@sha256:62d2a09bbef840a46099ac4c69421c90f84f28d018d479749049011329aa7f28")
	ciliumOp     = sysPod("kube-system", "cilium-operator-6b8d8c7f6-2lq9v", []string{"io.cilium/app=operator"}, "quay.io/cilium/operator-generic:v1.16.3")
	calicoNode   = sysPod("kube-system", "calico-node-7hj2k", []string{"k8s-app=calico-node"}, "docker.io/calico/cni:v3.28.0", "docker.io/calico/node:v3.28.0")
	calicoKC     = sysPod("kube-system", "calico-kube-controllers-5b9b456c66-x2x2x", []string{"k8s-app=calico-kube-controllers"}, "docker.io/calico/kube-controllers:v3.28.0")
	canal        = sysPod("kube-system", "canal-2k8sd", []string{"k8s-app=canal"}, "docker.io/calico/node:v3.27.2", "quay.io/coreos/flannel:v0.15.1")
	flannel      = sysPod("kube-flannel", "kube-flannel-ds-p8xk2", []string{"app=flannel"}, "docker.io/flannel/flannel:v0.25.6")
	kindnet      = sysPod("kube-system", "kindnet-zk7wm", []string{"app=kindnet"}, "docker.io/kindest/kindnetd:v20240813-c6f155d6")
	weave        = sysPod("kube-system", "weave-net-8vbg2", []string{"name=weave-net"}, "ghcr.io/weaveworks/launcher/weave-kube:2.8.1", "ghcr.io/weaveworks/launcher/weave-npc:2.8.1")
	antrea       = sysPod("kube-system", "antrea-agent-d6mpz", []string{"app=antrea", "component=antrea-agent"}, "antrea/antrea-agent-ubuntu:v2.1.0")
	kubeRouter   = sysPod("kube-system", "kube-router-q2wx8", []string{"k8s-app=kube-router"}, "docker.io/cloudnativelabs/kube-router:v2.2.1")
	ovnkube      = sysPod("ovn-kubernetes", "ovnkube-node-7xqzj", []string{"app=ovnkube-node"}, "ghcr.io/ovn-org/ovn-kubernetes/ovn-kube-ubuntu:master")
	multus       = sysPod("kube-system", "kube-multus-ds-9xk4l", []string{"app=multus"}, "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.0-thick")
	localhostImg = sysPod("kube-system", "cilium-local", nil, "localhost:5000/cilium/cilium:dev")
	awsNode      = sysPod("kube-system", "aws-node-7xk2p", []string{"k8s-app=aws-node"},
		"602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.3-eksbuild.1",
		"602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent:v1.1.2-eksbuild.1")
	azureCNS   = sysPod("kube-system", "azure-cns-4t9xq", []string{"k8s-app=azure-cns"}, "mcr.microsoft.com/containernetworking/azure-cns:v1.5.38")
	azureMasq  = sysPod("kube-system", "azure-ip-masq-agent-x2k8d", []string{"k8s-app=azure-ip-masq-agent"}, "mcr.microsoft.com/aks/ip-masq-agent-v2:v0.1.13")
	anetd      = sysPod("kube-system", "anetd-9w2lx", []string{"k8s-app=cilium"}, "gke.gcr.io/cilium/cilium:v1.14.14-gke4.400")
	calicoSys  = sysPod("calico-system", "calico-node-w8k2d", []string{"k8s-app=calico-node"}, "docker.io/calico/node:v3.29.1")
	antreaNew  = sysPod("kube-system", "antrea-agent-x8v2k", []string{"component=antrea-agent"}, "antrea/antrea-agent-ubuntu:v2.2.0")
	ovnOpenShi = sysPod("openshift-ovn-kubernetes", "ovnkube-node-b7w8q", []string{"app=ovnkube-node"}, "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:62d2a09bbef840a46099ac4c69421c90f84f28d018d479749049011329aa7f28")
	rke2Canal  = func() corev1.Pod {
		p := sysPod("kube-system", "rke2-canal-5xw7d", nil, "rancher/hardened-calico:v3.28.1-build20240806", "rancher/hardened-flannel:v0.25.5-build20240801")
		p.Spec.Containers[0].Name, p.Spec.Containers[1].Name = "calico-node", "kube-flannel"
		return p
	}()
)

func TestIdentify(t *testing.T) {
	tests := []struct {
		name     string
		pods     []corev1.Pod
		conf     []string
		cni, ver string
		pods2    []string // names of the CNI's pods
		evidence []string // substrings of the evidence, in order
	}{
		{name: "cilium", pods: []corev1.Pod{coredns, cilium2, ciliumOp, kubeProxy, cilium1}, conf: []string{"cilium-cni"},
			cni: "cilium", ver: "v1.16.3", pods2: []string{"cilium-4xk2p", "cilium-9zt7q", "cilium-operator-6b8d8c7f6-2lq9v"},
			evidence: []string{"cilium: 2 pods kube-system/cilium-4xk2p, kube-system/cilium-9zt7q (image quay.io/cilium/cilium:v1.16.3@sha256:", "cilium: 1 pod kube-system/cilium-operator-6b8d8c7f6-2lq9v (image quay.io/cilium/operator-generic:v1.16.3)", "CNI config: plugins cilium-cni"}},
		{name: "calico", pods: []corev1.Pod{calicoKC, calicoNode, coredns}, cni: "calico", ver: "v3.28.0",
			pods2: []string{"calico-kube-controllers-5b9b456c66-x2x2x", "calico-node-7hj2k"}},
		{name: "canal", pods: []corev1.Pod{calicoKC, canal}, cni: "canal", ver: "v3.27.2", pods2: []string{"canal-2k8sd"},
			evidence: []string{"canal: 1 pod kube-system/canal-2k8sd (label k8s-app=canal)", "also found: calico (1 pods)"}},
		{name: "flannel", pods: []corev1.Pod{flannel, coredns}, conf: []string{"flannel", "portmap"}, cni: "flannel", ver: "v0.25.6", pods2: []string{"kube-flannel-ds-p8xk2"}},
		{name: "kindnet", pods: []corev1.Pod{kindnet, kubeProxy}, conf: []string{"ptp", "portmap"}, cni: "kindnet", ver: "v20240813-c6f155d6", pods2: []string{"kindnet-zk7wm"}},
		{name: "weave", pods: []corev1.Pod{weave}, cni: "weave-net", ver: "2.8.1"},
		{name: "antrea", pods: []corev1.Pod{antrea}, cni: "antrea", ver: "v2.1.0"},
		{name: "kube-router", pods: []corev1.Pod{kubeRouter}, cni: "kube-router", ver: "v2.2.1"},
		{name: "ovn-kubernetes", pods: []corev1.Pod{ovnkube}, cni: "ovn-kubernetes", ver: "master"},
		{name: "local registry", pods: []corev1.Pod{localhostImg}, cni: "cilium", ver: "dev"},
		{name: "multus over calico", pods: []corev1.Pod{multus, calicoNode}, cni: "calico", ver: "v3.28.0", pods2: []string{"calico-node-7hj2k"},
			evidence: []string{"calico: 1 pod", "meta-plugin multus (1 pods) delegates to calico"}},
		{name: "multus alone", pods: []corev1.Pod{multus}, cni: "multus", ver: "v4.1.0-thick"},
		{name: "bridge", pods: []corev1.Pod{coredns, kubeProxy}, conf: []string{"bridge", "portmap"}, cni: "bridge",
			evidence: []string{"CNI config: plugins bridge,portmap", "no CNI pods among the 2 system pods: the CNI runs as plugin binaries only"}},
		{name: "config of a known CNI", conf: []string{"calico", "bandwidth"}, cni: "calico",
			evidence: []string{"CNI config: plugins calico,bandwidth", "no CNI pods among the 0 system pods"}},
		{name: "aws vpc cni", pods: []corev1.Pod{coredns, kubeProxy, awsNode}, conf: []string{"aws-cni", "egress-cni", "portmap"}, cni: "aws-vpc-cni", ver: "v1.18.3-eksbuild.1",
			pods2: []string{"aws-node-7xk2p"}, evidence: []string{"aws-vpc-cni: 1 pod kube-system/aws-node-7xk2p (image 602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.3-eksbuild.1)"}},
		{name: "azure cni", pods: []corev1.Pod{azureMasq, azureCNS}, conf: []string{"azure-vnet", "portmap"}, cni: "azure-cni", ver: "v1.5.38", pods2: []string{"azure-cns-4t9xq"}},
		{name: "azure cni from its configuration", pods: []corev1.Pod{azureMasq, coredns}, conf: []string{"azure-vnet"}, cni: "azure-cni",
			evidence: []string{"CNI config: plugins azure-vnet"}},
		{name: "aks kubenet is not azure cni", pods: []corev1.Pod{azureMasq, kubeProxy}, conf: []string{"bridge", "portmap"}, cni: "bridge"},
		{name: "azure cni powered by cilium", pods: []corev1.Pod{azureCNS, cilium1}, cni: "cilium", ver: "v1.16.3", evidence: []string{"also found: azure-cni (1 pods)"}},
		{name: "gke dataplane v2", pods: []corev1.Pod{anetd, kubeProxy}, cni: "cilium", ver: "v1.14.14-gke4.400",
			evidence: []string{"cilium: 1 pod kube-system/anetd-9w2lx", "GKE Dataplane V2"}},
		{name: "calico operator install", pods: []corev1.Pod{calicoSys}, cni: "calico", ver: "v3.29.1", evidence: []string{"calico-system/calico-node-w8k2d"}},
		{name: "antrea by name", pods: []corev1.Pod{antreaNew}, cni: "antrea", ver: "v2.2.0"},
		{name: "ovn-kubernetes on openshift", pods: []corev1.Pod{ovnOpenShi}, cni: "ovn-kubernetes", ver: "", evidence: []string{"openshift-ovn-kubernetes/ovnkube-node-b7w8q (label app=ovnkube-node)"}},
		{name: "canal by its containers", pods: []corev1.Pod{rke2Canal, calicoKC}, cni: "canal", ver: "v3.28.1-build20240806", pods2: []string{"rke2-canal-5xw7d"},
			evidence: []string{"canal: 1 pod kube-system/rke2-canal-5xw7d (containers calico-node + kube-flannel in one pod)"}},
		{name: "nothing", pods: []corev1.Pod{coredns}, cni: "unknown", evidence: []string{"no CNI pods among the 1 system pods, and no CNI config read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := Identify(tt.pods, tt.conf)
			if info.Name != tt.cni || info.Version != tt.ver {
				t.Errorf("got %s %s, want %s %s (evidence %q)", info.Name, info.Version, tt.cni, tt.ver, info.Evidence)
			}
			if tt.pods2 != nil {
				var names []string
				for _, p := range info.Pods {
					names = append(names, p.Name)
					if p.Node != "n1" || p.UID != types.UID("uid-"+p.Name) || p.Namespace == "" {
						t.Errorf("pod ref %+v", p)
					}
				}
				if !slices.Equal(names, tt.pods2) {
					t.Errorf("pods %v, want %v", names, tt.pods2)
				}
			}
			if len(info.Evidence) == 0 {
				t.Error("no evidence")
			}
			i := 0
			for _, e := range info.Evidence {
				if i < len(tt.evidence) && strings.Contains(e, tt.evidence[i]) {
					i++
				}
			}
			if i < len(tt.evidence) {
				t.Errorf("evidence %q lacks %q", info.Evidence, tt.evidence[i])
			}
		})
	}
}

func TestIdentifyManyPods(t *testing.T) {
	var pods []corev1.Pod
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		pods = append(pods, sysPod("kube-system", "cilium-"+n, nil, "quay.io/cilium/cilium:v1.15.0"))
	}
	info := Identify(pods, nil)
	if len(info.Evidence) != 1 || info.Evidence[0] != "cilium: 5 pods kube-system/cilium-a, kube-system/cilium-b, kube-system/cilium-c, … (image quay.io/cilium/cilium:v1.15.0)" {
		t.Errorf("evidence %q", info.Evidence)
	}
	if len(info.Pods) != 5 {
		t.Errorf("pods %v", info.Pods)
	}
}

func TestImagePath(t *testing.T) {
	for _, tt := range []struct{ ref, path, tag string }{
		{"nginx", "nginx", ""},
		{"nginx:1.27", "nginx", "1.27"},
		{"cilium/cilium@sha256:abcd", "cilium/cilium", ""},
		{"quay.io/cilium/cilium:v1.16.3@sha256:abcd", "cilium/cilium", "v1.16.3"},
		{"localhost:5000/foo/bar:v1", "foo/bar", "v1"},
		{"localhost/foo", "foo", ""},
		{"registry.k8s.io/kube-proxy:v1.31.0", "kube-proxy", "v1.31.0"},
	} {
		path, tag := imagePath(tt.ref)
		if path != tt.path || tag != tt.tag {
			t.Errorf("imagePath(%q) = %q, %q; want %q, %q", tt.ref, path, tag, tt.path, tt.tag)
		}
	}
}

func TestListSystemPods(t *testing.T) {
	var objs []runtime.Object
	for _, p := range []corev1.Pod{coredns, flannel, ovnkube, ovnOpenShi, sysPod("default", "web", nil, "nginx")} {
		objs = append(objs, p.DeepCopy())
	}
	pods, err := ListSystemPods(context.Background(), fake.NewClientset(objs...))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{coredns.Name, flannel.Name, ovnkube.Name, ovnOpenShi.Name}; !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
}

func TestPodsBySelector(t *testing.T) {
	var objs []runtime.Object
	for _, p := range []corev1.Pod{cilium1, cilium2, coredns, flannel, sysPod("kube-system", "mine", []string{"app.kubernetes.io/name=mycni"})} {
		objs = append(objs, p.DeepCopy())
	}
	cs := fake.NewClientset(objs...)
	for _, tt := range []struct {
		spec string
		want []string
		err  string
	}{
		{spec: "kube-system/k8s-app=cilium", want: []string{"cilium-4xk2p", "cilium-9zt7q"}},
		{spec: "k8s-app=cilium", want: []string{"cilium-4xk2p", "cilium-9zt7q"}},
		{spec: "kube-flannel/app=flannel", want: []string{"kube-flannel-ds-p8xk2"}},
		{spec: "app.kubernetes.io/name=mycni", want: []string{"mine"}},
		{spec: "kube-system/app.kubernetes.io/name=mycni", want: []string{"mine"}},
		{spec: "kube-system/app=nope", err: "no pod in namespace kube-system matches app=nope"},
		{spec: "kube-system/", err: "invalid selector"},
		{spec: "a=b=c", err: "invalid selector"},
	} {
		pods, err := PodsBySelector(context.Background(), cs, tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.spec, err)
			continue
		}
		var names []string
		for _, r := range PodRefs(pods) {
			names = append(names, r.Name)
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.spec, names, tt.want)
		}
	}
}
