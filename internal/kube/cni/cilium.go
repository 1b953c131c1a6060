package cni

import (
	"fmt"
	"strings"
)

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
