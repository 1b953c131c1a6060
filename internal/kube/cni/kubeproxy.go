package cni

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// FactsTimeout bounds each read of ClusterFacts.
const FactsTimeout = 10 * time.Second

// KubeProxyConfigMap is the ConfigMap in kube-system that holds
// kube-proxy's configuration (its mode: iptables, ipvs, nftables); the
// RBAC lets cnibench read it, by name (ConfigMaps).
const KubeProxyConfigMap = "kube-proxy"

// Kube-proxy modes of Facts.KubeProxyMode besides kube-proxy's own
// ("iptables", "ipvs", "nftables", "kernelspace" on Windows).
const (
	// KubeProxyNone: no kube-proxy pod runs and no CNI says it replaces it.
	KubeProxyNone = "none"
	// KubeProxyReplacedByCilium: no kube-proxy pod runs and cilium-config
	// sets kube-proxy-replacement true (strict before Cilium 1.14).
	KubeProxyReplacedByCilium = "replaced by cilium"
)

// kubeProxyConfigMaps are the ConfigMaps of kube-system that hold
// kube-proxy's KubeProxyConfiguration, and the key that holds it: kubeadm's
// and Amazon EKS's.
var kubeProxyConfigMaps = []struct{ name, key string }{
	{KubeProxyConfigMap, "config.conf"},
	{"kube-proxy-config", "config"},
}

// kubeProxyConfigMapNames are the names of the kube-system ConfigMaps that
// ClusterFacts reads (besides cilium-config, a mode ConfigMap).
func kubeProxyConfigMapNames() []string {
	var out []string
	for _, c := range kubeProxyConfigMaps {
		out = append(out, c.name)
	}
	return out
}

// ConfigMaps are the names of the ConfigMaps the package reads, by name:
// the CNIs' (DetectMode, for their mode) and kube-proxy's (ClusterFacts).
// The RBAC rule on configmaps must name them.
func ConfigMaps() []string {
	names := modeConfigMaps()
	for _, n := range kubeProxyConfigMapNames() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Facts are what identifies a cluster beyond its CNI: its Kubernetes
// version and its service implementation.
type Facts struct {
	// K8sVersion is the API server's version (discovery's gitVersion,
	// e.g. "v1.31.2"; "" if unknown).
	K8sVersion string
	// KubeProxyMode is kube-proxy's proxy mode ("iptables", "ipvs",
	// "nftables"), KubeProxyNone, KubeProxyReplacedByCilium, or "" if
	// unknown.
	KubeProxyMode string
}

// Labels are f's run labels: k8s_version and kube_proxy_mode, each only
// when known.
func (f Facts) Labels() map[string]string {
	l := map[string]string{}
	if f.K8sVersion != "" {
		l["k8s_version"] = f.K8sVersion
	}
	if f.KubeProxyMode != "" {
		l["kube_proxy_mode"] = f.KubeProxyMode
	}
	return l
}

// ClusterFacts reads the API server's version and kube-proxy's mode. It
// never fails: what cannot be read leaves the field "" and is said in the
// evidence, as is where each fact comes from. Every read is bounded by
// FactsTimeout.
//
// kube-proxy's mode: when kube-proxy's pods run (kube-system, labelled
// k8s-app=kube-proxy or named kube-proxy-*), from its ConfigMap
// (kube-proxy's config.conf as kubeadm writes it, or EKS's
// kube-proxy-config; an empty mode is iptables on Linux), else from the
// pods' --proxy-mode, else kube-proxy's default, iptables. When none
// runs, KubeProxyReplacedByCilium if cilium-config says so, else
// KubeProxyNone.
func ClusterFacts(ctx context.Context, cs kubernetes.Interface) (Facts, []string) {
	var f Facts
	var ev []string
	if v, err := serverVersion(ctx, cs); err != nil {
		ev = append(ev, "Kubernetes version unknown: "+err.Error())
	} else {
		f.K8sVersion = v
		ev = append(ev, "Kubernetes "+v+" (the API server's version)")
	}
	mode, mev := kubeProxyMode(ctx, cs)
	f.KubeProxyMode = mode
	return f, append(ev, mev...)
}

// serverVersion is discovery's gitVersion, bounded by FactsTimeout
// (the discovery client takes no context: it runs in a goroutine that
// is abandoned at the deadline).
func serverVersion(ctx context.Context, cs kubernetes.Interface) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, FactsTimeout)
	defer cancel()
	type res struct {
		v   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			ch <- res{err: fmt.Errorf("read the API server's version: %w", err)}
			return
		}
		ch <- res{v: v.GitVersion}
	}()
	select {
	case r := <-ch:
		if r.err == nil && r.v == "" {
			r.err = fmt.Errorf("the API server's version has no gitVersion")
		}
		return r.v, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("read the API server's version: %w", ctx.Err())
	}
}

// kubeProxyMode finds kube-proxy's mode (see ClusterFacts).
func kubeProxyMode(ctx context.Context, cs kubernetes.Interface) (string, []string) {
	var ev []string
	pods, perr := KubeProxyPods(ctx, cs)
	cfgMode, cfgFrom, cerr := kubeProxyConfig(ctx, cs)
	if perr != nil {
		ev = append(ev, "kube-proxy's pods not listed: "+perr.Error())
		if cerr == nil {
			return cfgMode, append(ev, fmt.Sprintf("kube-proxy mode %s, from %s (whether kube-proxy runs is unknown)", cfgMode, cfgFrom))
		}
		return "", append(ev, "kube-proxy mode unknown: "+cerr.Error())
	}
	if len(pods) == 0 {
		if cerr == nil {
			ev = append(ev, cfgFrom+" exists but no kube-proxy pod runs in kube-system")
		}
		if on, why := ciliumReplacesKubeProxy(ctx, cs); on {
			return KubeProxyReplacedByCilium, append(ev, "no kube-proxy pod in kube-system; "+why)
		} else if why != "" {
			ev = append(ev, why)
		}
		return KubeProxyNone, append(ev, "no kube-proxy pod in kube-system (labelled k8s-app=kube-proxy or named kube-proxy-*)")
	}
	running := fmt.Sprintf("%d kube-proxy pod(s), e.g. kube-system/%s", len(pods), pods[0].Name)
	if cerr == nil {
		return cfgMode, append(ev, fmt.Sprintf("kube-proxy mode %s, from %s; %s", cfgMode, cfgFrom, running))
	}
	ev = append(ev, "kube-proxy's configuration not read: "+cerr.Error())
	for i := range pods {
		if m, ok := proxyModeArg(&pods[i]); ok {
			return m, append(ev, fmt.Sprintf("kube-proxy mode %s, from --proxy-mode of pod kube-system/%s; %s", m, pods[i].Name, running))
		}
	}
	return "iptables", append(ev, fmt.Sprintf("kube-proxy mode iptables: kube-proxy's default on Linux (no ConfigMap read, no --proxy-mode); %s", running))
}

// KubeProxyPods lists kube-proxy's pods in kube-system, sorted by name: labelled
// k8s-app=kube-proxy (or component=kube-proxy, as static pods are), or
// named kube-proxy-*.
func KubeProxyPods(ctx context.Context, cs kubernetes.Interface) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, FactsTimeout)
	defer cancel()
	l, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods in namespace kube-system: %w", err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Labels["k8s-app"] == "kube-proxy" || p.Labels["component"] == "kube-proxy" || strings.HasPrefix(p.Name, "kube-proxy-") {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// kubeProxyConfiguration is what kubeProxyConfig reads of a
// KubeProxyConfiguration.
type kubeProxyConfiguration struct {
	Kind string `json:"kind"`
	Mode string `json:"mode"`
}

// kubeProxyConfig reads the mode of kube-proxy's ConfigMap: the mode, where
// it was read ("ConfigMap kube-system/kube-proxy (config.conf)") or why
// not.
func kubeProxyConfig(ctx context.Context, cs kubernetes.Interface) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, FactsTimeout)
	defer cancel()
	var errs []string
	for _, c := range kubeProxyConfigMaps {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, c.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			errs = append(errs, fmt.Sprintf("reading ConfigMap kube-system/%s is forbidden (cnibench needs get on configmaps %s there)", c.name, c.name))
			continue
		case err != nil:
			errs = append(errs, fmt.Sprintf("read ConfigMap kube-system/%s: %v", c.name, err))
			continue
		}
		from := fmt.Sprintf("ConfigMap kube-system/%s (%s)", c.name, c.key)
		s, ok := cm.Data[c.key]
		if !ok {
			errs = append(errs, from+": no key "+c.key)
			continue
		}
		mode, err := parseKubeProxyMode(s)
		if err != nil {
			errs = append(errs, from+": "+err.Error())
			continue
		}
		return mode, from, nil
	}
	if len(errs) == 0 {
		return "", "", fmt.Errorf("no ConfigMap %s in namespace kube-system", strings.Join(kubeProxyConfigMapNames(), " or "))
	}
	return "", "", fmt.Errorf("%s", strings.Join(errs, "; "))
}

// parseKubeProxyMode reads the mode of a KubeProxyConfiguration (YAML or
// JSON): "iptables" when it sets none, kube-proxy's default on Linux.
func parseKubeProxyMode(s string) (string, error) {
	var c kubeProxyConfiguration
	if err := yaml.Unmarshal([]byte(s), &c); err != nil {
		return "", fmt.Errorf("not a KubeProxyConfiguration: %w", err)
	}
	if c.Kind != "" && c.Kind != "KubeProxyConfiguration" {
		return "", fmt.Errorf("kind %q is not KubeProxyConfiguration", clip(c.Kind))
	}
	m := strings.ToLower(strings.TrimSpace(c.Mode))
	if m == "" {
		return "iptables", nil
	}
	if !backendType.MatchString(m) {
		return "", fmt.Errorf("mode %q is not a proxy mode", clip(c.Mode))
	}
	return m, nil
}

// proxyModeArg is the --proxy-mode of p's kube-proxy container (its
// command and arguments; "--proxy-mode=X" or "--proxy-mode X").
func proxyModeArg(p *corev1.Pod) (string, bool) {
	for _, c := range p.Spec.Containers {
		args := append(append([]string(nil), c.Command...), c.Args...)
		for i, a := range args {
			// A shell command line ("kube-proxy --proxy-mode=ipvs …")
			// is one argument of sh -c.
			for _, f := range strings.Fields(a) {
				if v, ok := strings.CutPrefix(f, "--proxy-mode="); ok && v != "" {
					return strings.ToLower(v), true
				}
			}
			if a == "--proxy-mode" && i+1 < len(args) && args[i+1] != "" {
				return strings.ToLower(args[i+1]), true
			}
		}
	}
	return "", false
}

// ciliumReplacesKubeProxy tells whether cilium-config (kube-system or
// cilium) sets kube-proxy-replacement true or strict, and why ("" when
// there is no cilium-config).
func ciliumReplacesKubeProxy(ctx context.Context, cs kubernetes.Interface) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, FactsTimeout)
	defer cancel()
	cm, err := findConfigMap(ctx, cs, "cilium-config", []string{"kube-system", "cilium"})
	if err != nil {
		if strings.HasPrefix(err.Error(), "no ConfigMap") {
			return false, ""
		}
		return false, "cilium's kube-proxy replacement unknown: " + err.Error()
	}
	v, ok := cm.Data["kube-proxy-replacement"]
	from := "ConfigMap " + cm.Namespace + "/" + cm.Name
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "strict":
		return true, fmt.Sprintf("%s sets kube-proxy-replacement %s", from, clip(v))
	case "":
		if !ok {
			return false, from + " does not set kube-proxy-replacement"
		}
	}
	return false, fmt.Sprintf("%s sets kube-proxy-replacement %q (not a full replacement)", from, clip(v))
}
