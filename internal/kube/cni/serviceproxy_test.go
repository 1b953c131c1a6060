package cni

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// ServiceProxy from what a cluster shows through its API (fake
// clientsets): kube-proxy's ConfigMap and pods, cilium-config,
// calico-node's environment.
func TestServiceProxy(t *testing.T) {
	const kubeadm = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: %s\n"
	conf := func(mode string) runtime.Object {
		return kubeProxyCM("kube-proxy", "config.conf", strings.Replace(kubeadm, "%s", mode, 1))
	}
	calico := func(bpf string) []corev1.Pod {
		env := []corev1.EnvVar{{Name: "CALICO_NETWORKING_BACKEND", Value: "bird"}, {Name: "CALICO_IPV4POOL_VXLAN", Value: "Never"}, {Name: "CALICO_IPV4POOL_IPIP", Value: "Never"}}
		if bpf != "" {
			env = append(env, corev1.EnvVar{Name: "FELIX_BPFENABLED", Value: bpf})
		}
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "calico-node-a", Labels: map[string]string{"k8s-app": "calico-node"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "calico-node", Image: "quay.io/calico/node:v3.31.0", Env: env}}}}}
	}
	calicoCfg := configMap("kube-system", "calico-config", map[string]string{"calico_backend": "bird"})
	ciliumPods := []corev1.Pod{cilium1}
	for _, tc := range []struct {
		name     string
		pods     []corev1.Pod // the CNI's (Identify)
		objs     []runtime.Object
		want     string
		evidence string
	}{
		{"bridge, kube-proxy iptables", nil, []runtime.Object{kubeProxy.DeepCopy(), conf("iptables")}, "kube-proxy-iptables", "its iptables mode"},
		{"bridge, kube-proxy nftables", nil, []runtime.Object{kubeProxy.DeepCopy(), conf("nftables")}, "kube-proxy-nftables", "its nftables mode"},
		{"kube-proxy's default mode", nil, []runtime.Object{kubeProxy.DeepCopy(), conf(`""`)}, "kube-proxy-iptables", ""},
		{"cilium kube-proxy replacement", ciliumPods, []runtime.Object{ciliumCfg("kube-proxy-replacement=true")}, ServiceProxyCilium, "kube-proxy-replacement true"},
		{"cilium replacement beside a running kube-proxy", ciliumPods, []runtime.Object{ciliumCfg("kube-proxy-replacement=true"), kubeProxy.DeepCopy(), conf("iptables")},
			ServiceProxyCilium, "kube-proxy runs too, mode iptables"},
		{"cilium with kube-proxy", ciliumPods, []runtime.Object{ciliumCfg("kube-proxy-replacement=false"), kubeProxy.DeepCopy(), conf("iptables")},
			"kube-proxy-iptables", `kube-proxy-replacement "false": not a full replacement`},
		{"calico eBPF", calico("true"), []runtime.Object{calicoCfg}, ServiceProxyCalicoEBPF, "FELIX_BPFENABLED true"},
		{"calico iptables with kube-proxy", calico(""), []runtime.Object{calicoCfg, kubeProxy.DeepCopy(), conf("nftables")}, "kube-proxy-nftables", "does not set FELIX_BPFENABLED"},
		{"calico eBPF off, no kube-proxy", calico("false"), []runtime.Object{calicoCfg}, ServiceProxyNone, "no CNI cnibench knows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.objs...)
			facts, _ := ClusterFacts(context.Background(), cs)
			info := Identify(tc.pods, []string{"bridge"})
			DetectMode(context.Background(), cs, &info)
			got, ev := ServiceProxy(info, facts.KubeProxyMode)
			if got != tc.want {
				t.Errorf("ServiceProxy = %q, want %q (kube-proxy mode %q, CNI %+v, evidence %q)", got, tc.want, facts.KubeProxyMode, info, ev)
			}
			if !strings.Contains(strings.Join(ev, "\n"), tc.evidence) {
				t.Errorf("evidence %q lacks %q", ev, tc.evidence)
			}
		})
	}
	for mode, want := range map[string]string{"": ServiceProxyUnknown, "userspace": ServiceProxyUnknown, "ipvs": "kube-proxy-ipvs",
		KubeProxyReplacedByCilium: ServiceProxyCilium, "unknown: no kube-proxy pod, node not asked": ServiceProxyUnknown} {
		if got, _ := ServiceProxy(Info{Name: "bridge"}, mode); got != want {
			t.Errorf("ServiceProxy(bridge, %q) = %q, want %q", mode, got, want)
		}
	}
}
