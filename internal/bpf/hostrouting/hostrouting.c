//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// hostrouting: Cilium-style "BPF host routing" for cnibench's namespace lab.
//
// One instance of this program runs per node network namespace, attached at
// tc ingress (TCX when available) of
//   - every host-side pod veth ("from pod"), and
//   - the node's uplink veth ("from wire").
//
// For each IPv4 packet it asks the node's FIB where the packet would go
// (bpf_fib_lookup) and then short-cuts the kernel's forwarding path:
//   - egress is a local pod's host-side veth: bpf_redirect_peer() moves the
//     skb straight to the pod's eth0 ingress, skipping the node's IP stack,
//     netfilter (PREROUTING/FORWARD/POSTROUTING, conntrack) and the per-CPU
//     backlog queue of a normal veth transmit;
//   - egress is the node's uplink: bpf_redirect_neigh() transmits on the
//     uplink and lets the kernel fill in L2 from its neighbour table
//     (resolving it if needed), again skipping netfilter;
//   - anything else (non-IPv4, local destination, no route, MTU exceeded,
//     TTL expiring, unknown egress device): TC_ACT_OK, i.e. the normal stack
//     handles it exactly as without the program (ICMP errors included).
//
// Which ifindexes are pods and which is the uplink is configured from user
// space in the `ifaces` map (AttachFromPod / AttachFromWire).
//
// Every decision is counted in the per-CPU `counters` array.

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

// Values of the `ifaces` map. Keep in sync with hostrouting_linux.go.
enum iface_kind {
	IFACE_POD = 1,
	IFACE_WIRE = 2,
};

// Indexes of the `counters` map. Keep in sync with hostrouting_linux.go.
enum counter_idx {
	CNT_REDIRECT_PEER = 0,  // redirected into a local pod with bpf_redirect_peer
	CNT_REDIRECT_NEIGH = 1, // transmitted with bpf_redirect_neigh
	CNT_PASS_NOT_IPV4 = 2,  // not IPv4 (or malformed): passed to the stack
	CNT_PASS_FIB = 3,       // FIB says local / unreachable / frag needed ...: passed
	CNT_PASS_TTL = 4,       // TTL would expire: passed so the stack sends ICMP
	CNT_PASS_EGRESS = 5,    // egress device unknown to us or same as ingress: passed
	CNT_DROP = 6,           // a redirect helper refused the packet: dropped
	CNT_MAX = 7,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CNT_MAX);
} counters SEC(".maps");

// ifindex (in this node's netns) -> enum iface_kind.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 4096);
} ifaces SEC(".maps");

static __always_inline int count(__u32 idx, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	// Per-CPU slot: no other CPU writes it, and tc programs do not nest on
	// one CPU for the same skb, so a plain increment is enough.
	if (v)
		*v += 1;
	return verdict;
}

// Decrement the TTL and patch the header checksum incrementally (RFC 1624),
// exactly like the kernel's ip_decrease_ttl(). The TTL and the checksum
// change by opposite amounts in one's-complement arithmetic, so the sum over
// the header is unchanged and a CHECKSUM_COMPLETE skb->csum stays valid;
// CHECKSUM_PARTIAL L4 checksums (pods' TSO/GSO traffic) do not cover the TTL.
static __always_inline void ip_decrease_ttl(struct iphdr *iph)
{
	__u32 check = (__u32)iph->check;

	check += (__u32)bpf_htons(0x0100);
	iph->check = (__sum16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

SEC("tc")
int host_routing(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = data + sizeof(*eth);
	struct bpf_fib_lookup fib = {};
	struct bpf_redir_neigh nh = {};
	__u32 ingress = skb->ingress_ifindex;
	__u32 oif, *kind;
	long rc, ret;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return count(CNT_PASS_NOT_IPV4, TC_ACT_OK);

	if ((void *)(iph + 1) > data_end) {
		// Headers not in the linear area (rare on veth): pull them in.
		if (bpf_skb_pull_data(skb, sizeof(*eth) + sizeof(*iph)) < 0)
			return count(CNT_PASS_NOT_IPV4, TC_ACT_OK);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		eth = data;
		iph = data + sizeof(*eth);
		if ((void *)(iph + 1) > data_end)
			return count(CNT_PASS_NOT_IPV4, TC_ACT_OK);
	}
	if (iph->version != 4 || iph->ihl < 5)
		return count(CNT_PASS_NOT_IPV4, TC_ACT_OK);

	// A router must not forward a packet whose TTL expires here; the stack
	// drops it and sends ICMP time exceeded.
	if (iph->ttl <= 1)
		return count(CNT_PASS_TTL, TC_ACT_OK);

	// Ingress-perspective lookup (no BPF_FIB_LOOKUP_OUTPUT), i.e. the same
	// question ip_route_input() asks when the stack forwards:
	//   - flags = 0 rather than BPF_FIB_LOOKUP_DIRECT: honour `ip rule`
	//     policy routing like the stack would. DIRECT would only read the
	//     main (or the device's l3mdev) table and saves the rules walk,
	//     which is negligible with the default three rules.
	//   - ifindex = ingress device: needed for iif-based rules and for the
	//     per-device forwarding check (BPF_FIB_LKUP_RET_FWD_DISABLED).
	//   - tot_len = 0 on purpose: with a non-zero tot_len the kernel compares
	//     it with the route MTU, and pods' TSO/GRO skbs carry an IP tot_len
	//     of up to 64 KiB, so every bulk TCP packet would come back
	//     FRAG_NEEDED. With 0 the tc variant checks the skb with
	//     is_skb_forwardable(), which understands GSO.
	//   - tos/l4_protocol/src: inputs of policy routing; ports left 0
	//     (only used for L4 multipath hashing / sport-dport rules).
	fib.family = AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = iph->protocol;
	fib.tot_len = 0;
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = iph->daddr;
	fib.ifindex = ingress;

	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return count(CNT_PASS_FIB, TC_ACT_OK);

	oif = fib.ifindex;
	if (oif == ingress)
		return count(CNT_PASS_EGRESS, TC_ACT_OK);
	kind = bpf_map_lookup_elem(&ifaces, &oif);
	if (!kind)
		return count(CNT_PASS_EGRESS, TC_ACT_OK);

	if (*kind == IFACE_POD && rc == BPF_FIB_LKUP_RET_SUCCESS) {
		// Rewrite L2 as the node's router would (source: the host-side
		// veth, destination: the pod's eth0 from the neighbour table).
		// The pod's stack would accept the frame anyway, because
		// redirect_peer scrubs the skb to PACKET_HOST, but captures in
		// the pod then show the same MACs as without the program.
		ip_decrease_ttl(iph);
		__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
		ret = bpf_redirect_peer(oif, 0);
		if (ret != TC_ACT_REDIRECT)
			return count(CNT_DROP, TC_ACT_SHOT);
		return count(CNT_REDIRECT_PEER, TC_ACT_REDIRECT);
	}

	// The uplink, or a pod whose neighbour entry is not resolved yet
	// (NO_NEIGH: we have no destination MAC to write). redirect_neigh
	// transmits on oif and lets the kernel resolve/fill L2 from its
	// neighbour table; once resolved, later packets to that pod take the
	// redirect_peer path above. With Calico-style static neighbour entries
	// for pods this branch is only taken for the uplink.
	//
	// The next hop from the FIB result (the gateway, or the destination for
	// a directly connected route) is passed explicitly. With a NULL params
	// pointer the kernel would do a second route lookup to find it.
	ip_decrease_ttl(iph);
	nh.nh_family = AF_INET;
	nh.ipv4_nh = fib.ipv4_dst;
	ret = bpf_redirect_neigh(oif, &nh, sizeof(nh), 0);
	if (ret != TC_ACT_REDIRECT)
		return count(CNT_DROP, TC_ACT_SHOT);
	return count(CNT_REDIRECT_NEIGH, TC_ACT_REDIRECT);
}

// bpf_fib_lookup, bpf_redirect_neigh and bpf_redirect_peer are GPL-only
// helpers, so the object must declare a GPL-compatible licence.
char __license[] SEC("license") = "Dual MIT/GPL";
