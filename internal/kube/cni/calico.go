package cni

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

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
