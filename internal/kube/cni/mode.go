package cni

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ModeTimeout bounds the reads of DetectMode.
const ModeTimeout = 10 * time.Second

// modeSource is where a CNI keeps the configuration its mode is read
// from: a ConfigMap, as the CNI's own manifests or Helm chart create it,
// looked up in namespaces in order.
type modeSource struct {
	// cni is the Info.Name it applies to.
	cni string
	// configMap is the ConfigMap's name, namespaces where it may be.
	configMap  string
	namespaces []string
	// parse reads the mode from the ConfigMap's data: the mode ("" if
	// the data does not tell), the settings read and evidence lines on
	// how the mode follows from them. An error means the data is
	// malformed.
	parse func(data map[string]string) (mode string, settings map[string]string, evidence []string, err error)
	// parseAgent, when set, is used instead of parse when the agent's
	// environment was found (Info.agent): env holds its variables,
	// with the values taken from this ConfigMap resolved.
	parseAgent func(data, env map[string]string, pod string) (mode string, settings map[string]string, evidence []string, err error)
}

// modeSources are the CNIs whose mode DetectMode reads; another CNI is
// one entry.
var modeSources = []modeSource{
	{cni: "flannel", configMap: "kube-flannel-cfg", namespaces: []string{"kube-flannel", "kube-system"}, parse: flannelMode},
	{cni: "cilium", configMap: "cilium-config", namespaces: []string{"kube-system", "cilium"}, parse: ciliumMode},
	// Calico's mode lives in its Installation resource (operator
	// installs, not read) or in calico-node's environment (manifest
	// installs), which seeds the first IP pool and configures felix.
	{cni: "calico", configMap: "calico-config", namespaces: []string{"kube-system", "calico-system"}, parse: calicoMode, parseAgent: calicoAgentMode},
	// Canal: flannel's network (net-conf.json in canal-config) with
	// calico-node's felix enforcing policy only.
	{cni: "canal", configMap: "canal-config", namespaces: []string{"kube-system"}, parse: canalMode, parseAgent: canalAgentMode},
}

// modeConfigMaps are the names of the ConfigMaps DetectMode reads.
func modeConfigMaps() []string {
	var out []string
	for _, s := range modeSources {
		out = append(out, s.configMap)
	}
	return out
}

// DetectMode reads the configuration objects of info's CNI (see
// modeSources: flannel's net-conf.json, cilium's cilium-config, calico's
// calico-config) and sets info.Mode and info.Settings. It never fails:
// a CNI whose configuration cnibench does not read, a missing or
// unreadable ConfigMap and malformed data leave Mode "" and add an
// evidence line saying why, as does the mode found (a CNI that was not
// identified gets neither). The reads are bounded by ModeTimeout.
func DetectMode(ctx context.Context, cs kubernetes.Interface, info *Info) {
	if info.Name == "" || info.Name == "unknown" {
		return
	}
	i := slices.IndexFunc(modeSources, func(s modeSource) bool { return s.cni == info.Name })
	if i < 0 {
		info.Evidence = append(info.Evidence, fmt.Sprintf("mode unknown: cnibench does not read %s's configuration", info.Name))
		return
	}
	src := &modeSources[i]
	ctx, cancel := context.WithTimeout(ctx, ModeTimeout)
	defer cancel()
	cm, err := findConfigMap(ctx, cs, src.configMap, src.namespaces)
	if err != nil {
		info.Evidence = append(info.Evidence, "mode unknown: "+err.Error())
		return
	}
	from := "ConfigMap " + cm.Namespace + "/" + cm.Name
	var mode string
	var settings map[string]string
	var ev []string
	if src.parseAgent != nil && info.agent != nil {
		from += " and " + info.agent.pod + "'s environment"
		mode, settings, ev, err = src.parseAgent(cm.Data, resolveEnv(info.agent.env, cm), info.agent.pod)
	} else {
		mode, settings, ev, err = src.parse(cm.Data)
	}
	if err != nil {
		info.Evidence = append(info.Evidence, fmt.Sprintf("mode unknown: %s: %v", from, err))
		return
	}
	info.Mode, info.Settings = mode, settings
	what := "mode " + mode
	if mode == "" {
		what = "mode unknown"
	}
	read := "nothing"
	if len(settings) > 0 {
		read = formatSettings(settings)
	}
	info.Evidence = append(info.Evidence, fmt.Sprintf("%s, from %s: %s", what, from, read))
	info.Evidence = append(info.Evidence, ev...)
}

// formatSettings is settings as "key=value" pairs in key order, values
// quoted when they are empty or hold spaces, commas or quotes.
func formatSettings(settings map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		if v == "" || strings.ContainsAny(v, " ,\"=\t\n") {
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// findConfigMap gets ConfigMap name from the first of namespaces that has
// it.
func findConfigMap(ctx context.Context, cs kubernetes.Interface, name string, namespaces []string) (*corev1.ConfigMap, error) {
	for _, ns := range namespaces {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return cm, nil
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("reading ConfigMap %s/%s is forbidden (cnibench needs get on configmaps there): %w", ns, name, err)
		default:
			return nil, fmt.Errorf("read ConfigMap %s/%s: %w", ns, name, err)
		}
	}
	return nil, fmt.Errorf("no ConfigMap %s in namespace %s", name, strings.Join(namespaces, " or "))
}

// clip shortens a setting read from the cluster to at most 64 bytes.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 64 {
		return s
	}
	i := 61
	for i > 0 && s[i]&0xC0 == 0x80 { // not in the middle of a rune
		i--
	}
	return s[:i] + "…"
}

// orNotSet is settings[k] quoted, or "not set".
func orNotSet(settings map[string]string, k string) string {
	if v, ok := settings[k]; ok {
		return strconv.Quote(v)
	}
	return "not set"
}

// resolveEnv is env's variables by name: a literal value, or the value of
// a key of cm (a configMapKeyRef to it); others (secrets, fields) left out.
func resolveEnv(env []corev1.EnvVar, cm *corev1.ConfigMap) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == cm.Name:
			if v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
				out[e.Name] = v
			}
		}
	}
	return out
}
