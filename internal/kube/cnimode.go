package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CNIModeTimeout bounds the reads of DetectCNIMode.
const CNIModeTimeout = 10 * time.Second

// modeSource is where a CNI keeps the configuration its mode is read
// from: a ConfigMap, as the CNI's own manifests or Helm chart create it,
// looked up in namespaces in order.
type modeSource struct {
	// cni is the CNIInfo.Name it applies to.
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
	// environment was found (CNIInfo.agent): env holds its variables,
	// with the values taken from this ConfigMap resolved.
	parseAgent func(data, env map[string]string, pod string) (mode string, settings map[string]string, evidence []string, err error)
}

// modeSources are the CNIs whose mode DetectCNIMode reads; another CNI is
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

// modeConfigMaps are the names of the ConfigMaps DetectCNIMode reads (the
// RBAC rule that lets it).
func modeConfigMaps() []string {
	var out []string
	for _, s := range modeSources {
		out = append(out, s.configMap)
	}
	return out
}

// DetectCNIMode reads the configuration objects of info's CNI (see
// modeSources: flannel's net-conf.json, cilium's cilium-config, calico's
// calico-config) and sets info.Mode and info.Settings. It never fails:
// a CNI whose configuration cnibench does not read, a missing or
// unreadable ConfigMap and malformed data leave Mode "" and add an
// evidence line saying why, as does the mode found (a CNI that was not
// identified gets neither). The reads are bounded by CNIModeTimeout.
func DetectCNIMode(ctx context.Context, cs kubernetes.Interface, info *CNIInfo) {
	if info.Name == "" || info.Name == "unknown" {
		return
	}
	i := slices.IndexFunc(modeSources, func(s modeSource) bool { return s.cni == info.Name })
	if i < 0 {
		info.Evidence = append(info.Evidence, fmt.Sprintf("mode unknown: cnibench does not read %s's configuration", info.Name))
		return
	}
	src := &modeSources[i]
	ctx, cancel := context.WithTimeout(ctx, CNIModeTimeout)
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

// flannelKey is the key of kube-flannel-cfg that holds flannel's network
// configuration.
const flannelKey = "net-conf.json"

// flannelNetConf is what flannelMode reads of net-conf.json (flannel's
// subnet.Config; encoding/json matches the keys without regard to case,
// as flannel's own parser does).
type flannelNetConf struct {
	Network     string
	IPv6Network string
	EnableIPv6  bool
	Backend     json.RawMessage
	// MTU is not flannel's (it derives the MTU from the node's
	// interface) but some installers write it: a number or a string.
	MTU any
}

// flannelBackend is what flannelMode reads of net-conf.json's Backend.
type flannelBackend struct {
	Type          string
	VNI           int
	Port          int
	DirectRouting bool
}

// backendType is what a flannel backend type may look like (udp, vxlan,
// host-gw, wireguard, ipip, alloc, aws-vpc, …).
var backendType = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

func flannelMode(data map[string]string) (string, map[string]string, []string, error) {
	s, ok := data[flannelKey]
	if !ok {
		return "", nil, nil, fmt.Errorf("no key %s", flannelKey)
	}
	return parseFlannelNetConf(s)
}

// parseFlannelNetConf reads flannel's net-conf.json: the mode is the
// backend's type ("vxlan+directrouting" for VXLAN with direct routing
// between nodes of one subnet); flannel's own default, udp, when the
// configuration has no Backend.
func parseFlannelNetConf(s string) (string, map[string]string, []string, error) {
	var c flannelNetConf
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return "", nil, nil, fmt.Errorf("%s: %w", flannelKey, err)
	}
	var ev []string
	var be flannelBackend
	if len(c.Backend) == 0 {
		be.Type = "udp"
		ev = append(ev, "flannel: "+flannelKey+" has no Backend: flannel's default, udp")
	} else if err := json.Unmarshal(c.Backend, &be); err != nil {
		return "", nil, nil, fmt.Errorf("%s: Backend: %w", flannelKey, err)
	}
	if !backendType.MatchString(be.Type) {
		return "", nil, nil, fmt.Errorf("%s: Backend.Type %q is not a backend type", flannelKey, clip(be.Type))
	}
	mode := strings.ToLower(be.Type)
	set := map[string]string{"backend": mode}
	if be.DirectRouting {
		set["direct_routing"] = "true"
		if mode == "vxlan" {
			mode += "+directrouting"
		}
	}
	if c.Network != "" {
		set["network"] = clip(c.Network)
	}
	if c.EnableIPv6 || c.IPv6Network != "" {
		set["ipv6_network"] = clip(c.IPv6Network)
	}
	if mtu := flannelMTU(c.MTU); mtu > 0 {
		set["mtu"] = strconv.Itoa(mtu)
	}
	if be.VNI != 0 {
		set["vni"] = strconv.Itoa(be.VNI)
	}
	if be.Port != 0 {
		set["port"] = strconv.Itoa(be.Port)
	}
	return mode, set, ev, nil
}

// flannelMTU is net-conf.json's MTU, a number or a string of one (0: none
// or not a number).
func flannelMTU(v any) int {
	switch v := v.(type) {
	case float64:
		if v >= 1 && v <= 1<<20 && v == float64(int(v)) {
			return int(v)
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 && n <= 1<<20 {
			return n
		}
	}
	return 0
}

// ciliumKeys are the keys of cilium-config that ciliumMode reads.
var ciliumKeys = []string{"routing-mode", "tunnel", "tunnel-protocol", "kube-proxy-replacement", "enable-host-legacy-routing",
	"enable-bpf-masquerade", "enable-policy", "enable-wireguard", "enable-ipsec", "enable-ztunnel", "datapath-mode", "ipam"}

// ciliumMode reads cilium-config: the routing between nodes (a tunnel
// and its protocol, or native routing), whether cilium replaces
// kube-proxy, the host routing (eBPF or the host stack's, "legacy"), the
// encryption between nodes and, from 1.16 on, the pods' devices when
// they are not veth pairs (datapath-mode netkit or netkit-l2; auto:
// netkit where the kernel has it). The keys are the same from 1.14 to
// 1.20 (routing-mode and tunnel-protocol replaced 1.13's tunnel;
// kube-proxy-replacement took true/false for strict/partial/disabled in
// 1.14 and only those from 1.16); 1.19 added enable-ztunnel.
func ciliumMode(data map[string]string) (string, map[string]string, []string, error) {
	set := map[string]string{}
	for _, k := range ciliumKeys {
		if v, ok := data[k]; ok {
			set[k] = clip(v)
		}
	}
	val := func(k string) string { return strings.ToLower(set[k]) }
	var parts, ev []string

	// Routing between nodes: routing-mode (1.14 and later), else the
	// older tunnel; tunnel vxlan when neither is set.
	proto := val("tunnel-protocol")
	if proto == "" && (val("tunnel") == "vxlan" || val("tunnel") == "geneve") {
		proto = val("tunnel")
	}
	if proto == "" {
		proto = "vxlan"
	}
	switch rm, tun := val("routing-mode"), val("tunnel"); {
	case rm == "tunnel":
		parts = append(parts, "tunnel "+proto)
	case rm == "native":
		parts = append(parts, "native routing")
	case rm != "":
		parts = append(parts, "routing unknown")
		ev = append(ev, fmt.Sprintf("cilium: routing-mode %q is neither tunnel nor native", set["routing-mode"]))
	case tun == "vxlan" || tun == "geneve":
		parts = append(parts, "tunnel "+tun)
	case tun == "disabled":
		parts = append(parts, "native routing")
	case tun != "":
		parts = append(parts, "routing unknown")
		ev = append(ev, fmt.Sprintf("cilium: tunnel %q is none of vxlan, geneve, disabled", set["tunnel"]))
	default:
		parts = append(parts, "tunnel "+proto)
		ev = append(ev, "cilium: neither routing-mode nor tunnel set: cilium's default, tunnel "+proto)
	}

	// kube-proxy replacement: true (strict before 1.14) replaces it;
	// partial and probe (before 1.14) only some of its functions.
	kpr := false
	switch v := val("kube-proxy-replacement"); v {
	case "true", "strict":
		kpr = true
		parts = append(parts, "kube-proxy replacement")
	case "partial", "probe":
		parts = append(parts, v+" kube-proxy replacement")
	case "", "false", "disabled":
		parts = append(parts, "kube-proxy")
	default:
		parts = append(parts, "kube-proxy replacement unknown")
		ev = append(ev, fmt.Sprintf("cilium: kube-proxy-replacement %q is none of true, false, strict, partial, probe, disabled", set["kube-proxy-replacement"]))
	}

	// Host routing: cilium routes in eBPF only if asked not to use the
	// host stack, with kube-proxy replaced and masquerading in eBPF; it
	// falls back to the host stack ("legacy") otherwise.
	var why []string
	if val("enable-host-legacy-routing") == "true" {
		why = append(why, "enable-host-legacy-routing is true")
	}
	if !kpr {
		why = append(why, fmt.Sprintf("kube-proxy-replacement is %s, not true", orNotSet(set, "kube-proxy-replacement")))
	}
	if val("enable-bpf-masquerade") != "true" {
		why = append(why, fmt.Sprintf("enable-bpf-masquerade is %s, not true", orNotSet(set, "enable-bpf-masquerade")))
	}
	if len(why) == 0 {
		parts = append(parts, "eBPF host routing")
		ev = append(ev, "cilium: eBPF host routing: enable-host-legacy-routing is not true, kube-proxy is replaced and enable-bpf-masquerade is true"+
			" (cilium still falls back to legacy host routing at start-up on a kernel older than 5.10, which its configuration does not show)")
	} else {
		parts = append(parts, "legacy host routing")
		ev = append(ev, "cilium: legacy host routing: "+strings.Join(why, "; ")+
			" (eBPF host routing needs enable-host-legacy-routing not true, kube-proxy-replacement true and enable-bpf-masquerade true)")
	}

	// Encryption between nodes.
	if val("enable-wireguard") == "true" {
		parts = append(parts, "wireguard")
	}
	if val("enable-ipsec") == "true" {
		parts = append(parts, "ipsec")
	}
	if val("enable-ztunnel") == "true" {
		parts = append(parts, "ztunnel")
	}

	// The pods' devices: veth pairs unless datapath-mode asks for netkit.
	switch v := val("datapath-mode"); v {
	case "", "veth":
	case "netkit", "netkit-l2":
		parts = append(parts, v)
	case "auto":
		parts = append(parts, "netkit or veth")
		ev = append(ev, "cilium: datapath-mode auto: netkit where the kernel has it, else veth pairs (the agent's status says which)")
	default:
		parts = append(parts, "datapath mode unknown")
		ev = append(ev, fmt.Sprintf("cilium: datapath-mode %q is none of veth, netkit, netkit-l2, auto", set["datapath-mode"]))
	}
	return strings.Join(parts, ", "), set, ev, nil
}

// orNotSet is settings[k] quoted, or "not set".
func orNotSet(settings map[string]string, k string) string {
	if v, ok := settings[k]; ok {
		return strconv.Quote(v)
	}
	return "not set"
}

// calicoMode reads calico-config's veth_mtu: the mode stays unknown.
func calicoMode(data map[string]string) (string, map[string]string, []string, error) {
	ev := []string{"calico: the mode (encapsulation, BGP, eBPF dataplane) is in the Installation resource or calico-node's environment, which cnibench does not read"}
	v, ok, err := vethMTU(data)
	if err != nil || !ok {
		return "", nil, ev, err
	}
	if v == "0" {
		ev = append(ev, "calico: veth_mtu 0: calico-node detects the MTU itself")
	}
	return "", map[string]string{"veth_mtu": v}, ev, nil
}

// vethMTU is the veth_mtu key of calico-config or canal-config, the MTU
// the calico CNI plugin gives the pods ("0": the one calico-node
// detected); ok false if there is none, an error if it is not a number.
func vethMTU(data map[string]string) (v string, ok bool, err error) {
	v, ok = data["veth_mtu"]
	if !ok {
		return "", false, nil
	}
	v = strings.TrimSpace(v)
	if _, err := strconv.Atoi(v); err != nil {
		return "", false, errors.New("veth_mtu " + strconv.Quote(clip(v)) + " is not a number")
	}
	return v, true, nil
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

// calicoEnvKeys are the variables of calico-node's environment that say
// its mode (a manifest install's): the routing backend, the encapsulation
// of the IP pool it creates at start, and felix's dataplane.
var calicoEnvKeys = []string{"CALICO_NETWORKING_BACKEND", "CALICO_IPV4POOL_VXLAN", "CALICO_IPV4POOL_IPIP", "FELIX_BPFENABLED", "FELIX_NFTABLESMODE"}

// calicoAgentMode reads Calico's mode from calico-node's environment
// (and calico-config, which it may take values from): the encapsulation
// ("vxlan", "vxlan cross-subnet", "ipip", "bgp without encapsulation",
// "policy only") and the dataplane ("iptables", "nftables", "eBPF"), e.g.
// "vxlan, nftables dataplane".
func calicoAgentMode(data, env map[string]string, pod string) (string, map[string]string, []string, error) {
	_, set, ev, err := calicoMode(data)
	if err != nil {
		return "", nil, nil, err
	}
	ev = nil // calicoMode's "not read" no longer holds
	if set == nil {
		set = map[string]string{}
	}
	for _, k := range calicoEnvKeys {
		if v, ok := env[k]; ok {
			set[k] = clip(v)
		}
	}
	backend := strings.ToLower(strings.TrimSpace(env["CALICO_NETWORKING_BACKEND"]))
	if backend == "" {
		backend = strings.ToLower(strings.TrimSpace(data["calico_backend"]))
	}
	is := func(k, v string) bool { return strings.EqualFold(strings.TrimSpace(env[k]), v) }
	var encap string
	switch {
	case backend == "none":
		encap = "policy only"
	case is("CALICO_IPV4POOL_VXLAN", "Always"):
		encap = "vxlan"
	case is("CALICO_IPV4POOL_VXLAN", "CrossSubnet"):
		encap = "vxlan cross-subnet"
	case is("CALICO_IPV4POOL_IPIP", "Always"):
		encap = "ipip"
	case is("CALICO_IPV4POOL_IPIP", "CrossSubnet"):
		encap = "ipip cross-subnet"
	case backend == "bird" && (is("CALICO_IPV4POOL_VXLAN", "Never") || env["CALICO_IPV4POOL_VXLAN"] == "") && is("CALICO_IPV4POOL_IPIP", "Never"):
		encap = "bgp without encapsulation"
	default:
		encap = "encapsulation unknown"
		ev = append(ev, fmt.Sprintf("calico: the IP pool's encapsulation is not in %s's environment (CALICO_IPV4POOL_VXLAN %s, CALICO_IPV4POOL_IPIP %s, backend %q)",
			pod, orNotSet(set, "CALICO_IPV4POOL_VXLAN"), orNotSet(set, "CALICO_IPV4POOL_IPIP"), backend))
	}
	var dataplane string
	switch {
	case is("FELIX_BPFENABLED", "true"):
		dataplane = "eBPF dataplane"
	case is("FELIX_NFTABLESMODE", "Enabled"):
		dataplane = "nftables dataplane"
	case is("FELIX_NFTABLESMODE", "Disabled"):
		dataplane = "iptables dataplane"
	case is("FELIX_NFTABLESMODE", "Auto"):
		dataplane = "nftables or iptables dataplane (felix's auto)"
	default:
		dataplane = "felix's default dataplane"
		ev = append(ev, "calico: neither FELIX_BPFENABLED nor FELIX_NFTABLESMODE set: felix's default dataplane (a FelixConfiguration may set it; not read)")
	}
	ev = append(ev, "calico: the environment seeds the first IP pool and configures felix; the IP pools and FelixConfiguration themselves are not read")
	return encap + ", " + dataplane, set, ev, nil
}

// canalMode reads canal-config's net-conf.json: flannel's backend, with
// Calico's policy ("flannel vxlan, calico policy"); and its veth_mtu, the
// pods' MTU (a setting, with evidence when it is 0).
func canalMode(data map[string]string) (string, map[string]string, []string, error) {
	s, ok := data[flannelKey]
	if !ok {
		return "", nil, []string{"canal: no " + flannelKey + " in canal-config"}, nil
	}
	mode, set, ev, err := parseFlannelNetConf(s)
	if err != nil {
		return "", nil, nil, err
	}
	v, ok, err := vethMTU(data)
	if err != nil {
		return "", nil, nil, err
	}
	if ok {
		set["veth_mtu"] = v
		if v == "0" {
			// felix's determinePodMTU (felix/dataplane/linux, Calico
			// v3.31): with no encapsulation of its own enabled, the
			// host interface's MTU.
			ev = append(ev, "canal: veth_mtu 0: the CNI plugin gives the pods the MTU calico-node detected, which in policy-only mode is the host interface's: flannel's encapsulation is not subtracted")
		}
	}
	return "flannel " + mode + ", calico policy", set, ev, nil
}

// canalAgentMode is canalMode with felix's dataplane from calico-node's
// environment ("flannel vxlan, calico policy, iptables dataplane").
func canalAgentMode(data, env map[string]string, pod string) (string, map[string]string, []string, error) {
	mode, set, ev, err := canalMode(data)
	if err != nil || mode == "" {
		return mode, set, ev, err
	}
	cmode, cset, cev, err := calicoAgentMode(map[string]string{}, env, pod)
	if err != nil {
		return "", nil, nil, err
	}
	for k, v := range cset {
		set[k] = v
	}
	_, dataplane, _ := strings.Cut(cmode, ", ")
	return mode + ", " + dataplane, set, append(ev, cev...), nil
}
