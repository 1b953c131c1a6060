package cni

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func kubeProxyCM(name, key, conf string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Data: map[string]string{key: conf}}
}

func ciliumCM(kpr string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium-config"}, Data: map[string]string{"kube-proxy-replacement": kpr}}
}

func withArgs(p corev1.Pod, args ...string) *corev1.Pod {
	p = *p.DeepCopy()
	p.Spec.Containers[0].Command = args
	return &p
}

func TestClusterFacts(t *testing.T) {
	const kubeadm = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: %s\nclusterCIDR: 10.244.0.0/16\n"
	conf := func(mode string) string { return strings.Replace(kubeadm, "%s", mode, 1) }
	tests := []struct {
		name     string
		objs     []runtime.Object
		version  string
		mode     string
		evidence []string
	}{
		{name: "kubeadm ipvs", version: "v1.31.2", objs: []runtime.Object{kubeProxy.DeepCopy(), kubeProxyCM("kube-proxy", "config.conf", conf("ipvs"))},
			mode: "ipvs", evidence: []string{"Kubernetes v1.31.2", "kube-proxy mode ipvs, from ConfigMap kube-system/kube-proxy (config.conf); 1 kube-proxy pod(s)"}},
		{name: "kubeadm default mode", objs: []runtime.Object{kubeProxy.DeepCopy(), kubeProxyCM("kube-proxy", "config.conf", conf(`""`))},
			mode: "iptables", evidence: []string{"kube-proxy mode iptables, from ConfigMap"}},
		{name: "eks config", objs: []runtime.Object{kubeProxy.DeepCopy(), kubeProxyCM("kube-proxy-config", "config", conf("nftables"))},
			mode: "nftables", evidence: []string{"from ConfigMap kube-system/kube-proxy-config (config)"}},
		{name: "args", objs: []runtime.Object{withArgs(kubeProxy, "/bin/sh", "-c", "kube-proxy --v=2 --proxy-mode=ipvs")},
			mode: "ipvs", evidence: []string{"no ConfigMap kube-proxy or kube-proxy-config", "from --proxy-mode of pod kube-system/kube-proxy-xyz12"}},
		{name: "separate arg", objs: []runtime.Object{withArgs(kubeProxy, "kube-proxy", "--proxy-mode", "IPVS")}, mode: "ipvs"},
		{name: "no mode anywhere", objs: []runtime.Object{kubeProxy.DeepCopy()}, mode: "iptables", evidence: []string{"kube-proxy's default on Linux"}},
		{name: "malformed config falls back to args", objs: []runtime.Object{withArgs(kubeProxy, "kube-proxy", "--proxy-mode=nftables"), kubeProxyCM("kube-proxy", "config.conf", "kind: Pod\n")},
			mode: "nftables", evidence: []string{`kind "Pod" is not KubeProxyConfiguration`}},
		{name: "cilium replaces", objs: []runtime.Object{coredns.DeepCopy(), ciliumCM("true")}, mode: KubeProxyReplacedByCilium,
			evidence: []string{"no kube-proxy pod in kube-system; ConfigMap kube-system/cilium-config sets kube-proxy-replacement true"}},
		{name: "cilium strict with leftover config", objs: []runtime.Object{ciliumCM("strict"), kubeProxyCM("kube-proxy", "config.conf", conf("iptables"))}, mode: KubeProxyReplacedByCilium,
			evidence: []string{"ConfigMap kube-system/kube-proxy (config.conf) exists but no kube-proxy pod runs"}},
		{name: "cilium partial, no kube-proxy", objs: []runtime.Object{ciliumCM("partial")}, mode: KubeProxyNone,
			evidence: []string{`kube-proxy-replacement "partial" (not a full replacement)`, "no kube-proxy pod"}},
		{name: "none", objs: []runtime.Object{coredns.DeepCopy()}, mode: KubeProxyNone},
		{name: "static pod", objs: []runtime.Object{func() *corev1.Pod {
			p := sysPod("kube-system", "kube-proxy-node1", []string{"component=kube-proxy"}, "registry.k8s.io/kube-proxy:v1.30.0")
			return withArgs(p, "kube-proxy", "--proxy-mode=iptables")
		}()}, mode: "iptables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objs...)
			if tt.version != "" {
				cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &k8sversion.Info{GitVersion: tt.version}
			}
			f, ev := ClusterFacts(context.Background(), cs)
			if f.KubeProxyMode != tt.mode {
				t.Errorf("mode %q, want %q (evidence %q)", f.KubeProxyMode, tt.mode, ev)
			}
			if tt.version != "" && f.K8sVersion != tt.version {
				t.Errorf("version %q, want %q", f.K8sVersion, tt.version)
			}
			all := strings.Join(ev, "\n")
			for _, want := range tt.evidence {
				if !strings.Contains(all, want) {
					t.Errorf("evidence %q lacks %q", ev, want)
				}
			}
		})
	}
}

func TestClusterFactsErrors(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("boom")
	})
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &k8sversion.Info{}
	f, ev := ClusterFacts(context.Background(), cs)
	if f.KubeProxyMode != "" || f.K8sVersion != "" {
		t.Errorf("facts %+v", f)
	}
	all := strings.Join(ev, "\n")
	for _, want := range []string{"Kubernetes version unknown", "kube-proxy's pods not listed: list pods in namespace kube-system: boom", "kube-proxy mode unknown"} {
		if !strings.Contains(all, want) {
			t.Errorf("evidence %q lacks %q", ev, want)
		}
	}
	if l := f.Labels(); len(l) != 0 {
		t.Errorf("labels %v", l)
	}
}

func TestFactsLabels(t *testing.T) {
	got := Facts{K8sVersion: "v1.30.1", KubeProxyMode: KubeProxyReplacedByCilium}.Labels()
	want := map[string]string{"k8s_version": "v1.30.1", "kube_proxy_mode": "replaced by cilium"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
