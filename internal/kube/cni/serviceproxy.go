package cni

import (
	"fmt"
	"slices"
	"strings"
)

// What serves a cluster's ClusterIP services (ServiceProxy): kube-proxy in
// one of its modes, or a CNI that replaces it.
const (
	// ServiceProxyKubeProxy prefixes kube-proxy's mode: kube-proxy-iptables,
	// kube-proxy-nftables, kube-proxy-ipvs.
	ServiceProxyKubeProxy = "kube-proxy-"
	// ServiceProxyCilium: Cilium's kube-proxy replacement (its socket
	// load balancer and TC programs translate the services).
	ServiceProxyCilium = "cilium-kpr"
	// ServiceProxyCalicoEBPF: Calico's eBPF dataplane, whose felix
	// translates the services in its own BPF programs (kube-proxy, if it
	// still runs, is bypassed).
	ServiceProxyCalicoEBPF = "calico-ebpf"
	// ServiceProxyNone: no kube-proxy runs and no CNI that cnibench knows
	// says it replaces it.
	ServiceProxyNone = "none"
	// ServiceProxyUnknown: kube-proxy's mode could not be read.
	ServiceProxyUnknown = "unknown"
)

// kubeProxyModes are kube-proxy's own modes (Linux and Windows).
var kubeProxyModes = []string{"iptables", "nftables", "ipvs", "kernelspace"}

// ServiceProxy says what serves ClusterIP services on a cluster whose CNI
// is info (DetectMode done) and whose kube-proxy mode is kubeProxyMode
// (Facts.KubeProxyMode, or a node's kube-proxy's own answer: "iptables",
// "nftables", "ipvs", KubeProxyReplacedByCilium, KubeProxyNone, "" or
// anything else when unknown), with the evidence, one fact per line.
//
// A CNI that replaces kube-proxy takes precedence: Cilium whose
// cilium-config sets kube-proxy-replacement true (or strict, before 1.14)
// is ServiceProxyCilium; Calico or Canal whose calico-node sets
// FELIX_BPFENABLED true is ServiceProxyCalicoEBPF (felix's BPF programs
// see a service's packets before kube-proxy's rules would). Otherwise
// kube-proxy's mode names it: ServiceProxyKubeProxy + mode.
func ServiceProxy(info Info, kubeProxyMode string) (string, []string) {
	var ev []string
	running := ""
	if slices.Contains(kubeProxyModes, kubeProxyMode) {
		running = fmt.Sprintf(" (kube-proxy runs too, mode %s: its rules are not reached by what the CNI translates first)", kubeProxyMode)
	}
	switch info.Name {
	case "cilium":
		v := strings.ToLower(strings.TrimSpace(info.Settings["kube-proxy-replacement"]))
		if v == "true" || v == "strict" {
			return ServiceProxyCilium, append(ev, "cilium-config sets kube-proxy-replacement "+v+": Cilium translates the services"+running)
		}
		if v != "" {
			ev = append(ev, fmt.Sprintf("cilium-config sets kube-proxy-replacement %q: not a full replacement", v))
		}
	case "calico", "canal":
		if strings.EqualFold(strings.TrimSpace(info.Settings["FELIX_BPFENABLED"]), "true") {
			return ServiceProxyCalicoEBPF, append(ev, "calico-node sets FELIX_BPFENABLED true: felix's eBPF dataplane translates the services"+running)
		}
		if _, ok := info.Settings["FELIX_BPFENABLED"]; !ok {
			ev = append(ev, "calico-node's environment does not set FELIX_BPFENABLED (an operator install's Installation or a FelixConfiguration may: not read)")
		}
	}
	switch {
	case slices.Contains(kubeProxyModes, kubeProxyMode):
		return ServiceProxyKubeProxy + kubeProxyMode, append(ev, "kube-proxy serves the services in its "+kubeProxyMode+" mode")
	case kubeProxyMode == KubeProxyReplacedByCilium:
		return ServiceProxyCilium, append(ev, "no kube-proxy runs and cilium-config replaces it")
	case kubeProxyMode == KubeProxyNone:
		return ServiceProxyNone, append(ev, "no kube-proxy runs and no CNI cnibench knows says it replaces it")
	case kubeProxyMode == "":
		return ServiceProxyUnknown, append(ev, "kube-proxy's mode unknown")
	}
	return ServiceProxyUnknown, append(ev, fmt.Sprintf("kube-proxy's mode %q is not one cnibench knows", clip(kubeProxyMode)))
}
