package filter

import (
	"fmt"
	"strings"
)

// The CNI-like composites (issue 25, seed 004's Calico and Cilium runs):
// a raw deny set inside the rules a CNI installs around it, next to the raw
// mechanisms, proven by the same probes.
//
//   - calico-like: an ipset hash:net created with Calico's (Felix's) fixed
//     maxelem, 1 048 576 (MaxIpsetSize), matched from a workload chain
//     shaped like Calico's cali-fw-*: accept established/related first,
//     drop invalid, clear the accept mark, jump to a policy chain that
//     drops the set's destinations and marks the rest, return marked
//     packets, drop the unmarked. Every point is new-connection traversal
//     (the leading accept is part of what Calico installs).
//   - cilium-like: the ebpf-lpm deny map at TCX ingress, with kube-proxy's
//     nftables chains on the node (a services verdict map, endpoint and
//     cluster-IP checks for new connections, masquerading of marked
//     packets), and the map capped at Cilium's policy map limit, 65 536
//     entries (bpf-policy-map-max): larger deny sets are "too large".
//   - ipset-default: the raw ipset with the kernel's default maxelem,
//     65 536, instead of the ipset mechanism's maxelem sized to N + 1024;
//     one CIDR more than fits is refused by the kernel ("Hash is full")
//     and recorded "too large: <the kernel's error>".
const (
	MechCalicoLike   = "calico-like"
	MechCiliumLike   = "cilium-like"
	MechIPSetDefault = "ipset-default"
)

// Sizes of the composites' limits.
const (
	// CalicoMaxIPSetSize is Felix's default MaxIpsetSize, the maxelem of
	// every IP set Calico creates (and seed 004's 1 048 576).
	CalicoMaxIPSetSize = 1 << 20
	// IPSetDefaultMaxelem is the kernel's (and the ipset tool's) default
	// maxelem of a hash set created without one.
	IPSetDefaultMaxelem = 65536
	// CiliumPolicyMapMax is the largest endpoint policy map Cilium allows
	// (bpf-policy-map-max; seed 004 raised it to this limit).
	CiliumPolicyMapMax = 65536
)

// ciliumLimitReason is why cilium-like refuses larger deny sets.
var ciliumLimitReason = fmt.Sprintf("Cilium's endpoint policy map holds at most %d entries (bpf-policy-map-max, seed 004's setting); a larger deny set is refused, not loaded", CiliumPolicyMapMax)

// Chains the iptables-based mechanisms create in the filter table of the
// node namespace. FORWARD -i Dev jumps to chainEgress; for the iptables
// mechanisms chainEgress holds one "-d CIDR -j chainDrop" rule per CIDR and
// chainDrop a single DROP whose packet counter is Stats.Dropped.
const (
	chainEgress = "CNB-EGRESS"
	chainDrop   = "CNB-EGRESS-DROP"
)

// Chains and marks of calico-like (Calico's cali-fw-* workload chain and
// cali-po-* policy chain; 0x10000 is Felix's accept mark bit).
const (
	chainCaliPolicy = "CNB-CALI-PO"
	calicoMarkBit   = "0x10000"
)

// calicoRules is calico-like's iptables-restore input: the workload chain
// (chainEgress, jumped to by jump) and the policy chain matching set.
func calicoRules(set string, jump []string) []byte {
	var b lineBuffer
	b.Write("*filter")
	b.Write(":"+chainEgress, "-", "[0:0]")
	b.Write(":"+chainCaliPolicy, "-", "[0:0]")
	b.Write("-A", chainEgress, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT")
	b.Write("-A", chainEgress, "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP")
	b.Write("-A", chainEgress, "-j", "MARK", "--set-xmark", "0x0/"+calicoMarkBit)
	b.Write("-A", chainEgress, "-j", chainCaliPolicy)
	b.Write("-A", chainEgress, "-m", "mark", "--mark", calicoMarkBit+"/"+calicoMarkBit, "-j", "RETURN")
	b.Write("-A", chainEgress, "-j", "DROP")
	b.Write("-A", chainCaliPolicy, "-m", "set", "--match-set", set, "dst", "-j", "DROP")
	b.Write("-A", chainCaliPolicy, "-j", "MARK", "--set-xmark", calicoMarkBit+"/"+calicoMarkBit)
	b.Write("-A", chainCaliPolicy, "-m", "mark", "--mark", calicoMarkBit+"/"+calicoMarkBit, "-j", "RETURN")
	b.Write(append([]string{"-I"}, jump...)...)
	b.Write("COMMIT")
	return b.Bytes()
}

// kubeProxyTable is the nftables table cilium-like adds on the node.
const kubeProxyTable = "cnb-kube-proxy"

// kubeProxyServices are the services of kubeProxyRules: ClusterIPs outside
// every path the scenario uses (198.19.255.0/24 is unrouted in the lab),
// so they cost lookups, never traffic.
var kubeProxyServices = []struct{ vip, proto, port, endpoint string }{
	{"198.19.255.1", "tcp", "443", "198.19.254.1:6443"},
	{"198.19.255.10", "udp", "53", "198.19.254.10:53"},
	{"198.19.255.10", "tcp", "53", "198.19.254.10:53"},
}

// kubeProxyRules is cilium-like's `nft -f` input: kube-proxy's nftables
// mode reduced to its per-packet structure (kubernetes pkg/proxy/nftables):
// new connections through the endpoint and cluster-IP checks in the filter
// hooks, every connection's first packet through the services verdict map
// in nat prerouting and output, masquerading of marked packets in nat
// postrouting.
func kubeProxyRules() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("table ip %s {", kubeProxyTable)
	w("\tset cluster-ips {")
	w("\t\ttype ipv4_addr")
	var vips []string
	for _, s := range kubeProxyServices {
		if len(vips) == 0 || vips[len(vips)-1] != s.vip {
			vips = append(vips, s.vip)
		}
	}
	w("\t\telements = { %s }", strings.Join(vips, ", "))
	w("\t}")
	w("\tmap no-endpoint-services {")
	w("\t\ttype ipv4_addr . inet_proto . inet_service : verdict")
	w("\t}")
	var elems []string
	for i, s := range kubeProxyServices {
		elems = append(elems, fmt.Sprintf("%s . %s . %s : goto service-%d", s.vip, s.proto, s.port, i))
	}
	for i, s := range kubeProxyServices {
		w("\tchain service-%d {", i)
		w("\t\tmeta l4proto %s dnat to %s", s.proto, s.endpoint)
		w("\t}")
	}
	w("\tmap service-ips {")
	w("\t\ttype ipv4_addr . inet_proto . inet_service : verdict")
	w("\t\telements = { %s }", strings.Join(elems, ", "))
	w("\t}")
	w("\tchain filter-forward {")
	w("\t\ttype filter hook forward priority -110; policy accept;")
	w("\t\tct state new jump service-endpoints-check")
	w("\t\tct state new jump cluster-ips-check")
	w("\t}")
	w("\tchain filter-output {")
	w("\t\ttype filter hook output priority -110; policy accept;")
	w("\t\tct state new jump service-endpoints-check")
	w("\t\tct state new jump cluster-ips-check")
	w("\t}")
	w("\tchain service-endpoints-check {")
	w("\t\tip daddr . meta l4proto . th dport vmap @no-endpoint-services")
	w("\t}")
	w("\tchain cluster-ips-check {")
	w("\t\tip daddr @cluster-ips reject")
	w("\t}")
	w("\tchain services {")
	w("\t\tip daddr . meta l4proto . th dport vmap @service-ips")
	w("\t}")
	w("\tchain nat-prerouting {")
	w("\t\ttype nat hook prerouting priority -100; policy accept;")
	w("\t\tjump services")
	w("\t}")
	w("\tchain nat-output {")
	w("\t\ttype nat hook output priority -100; policy accept;")
	w("\t\tjump services")
	w("\t}")
	w("\tchain masquerading {")
	w("\t\tmeta mark & 0x00004000 == 0x00000000 return")
	w("\t\tmeta mark set meta mark ^ 0x00004000")
	w("\t\tmasquerade fully-random")
	w("\t}")
	w("\tchain nat-postrouting {")
	w("\t\ttype nat hook postrouting priority 100; policy accept;")
	w("\t\tjump masquerading")
	w("\t}")
	w("}")
	return b.String()
}
