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
//     backlog queue of a normal veth transmit; or, when loaded with
//     `redirect_host` set (Calico eBPF style), bpf_redirect() to the egress
//     of that host-side veth: still no IP stack or netfilter, but the skb is
//     transmitted by veth_xmit and reaches the pod through the per-CPU
//     backlog (process_backlog), as any veth transmit does;
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
//
// Unless loaded "bare" (the `bare` constant, set from user space), every
// packet the program is about to redirect also goes through a Cilium-like
// connection-tracking and policy step first:
//   - a lookup of its 5-tuple in the `ct` LRU hash (then of the reversed
//     tuple, for replies) and an update of the entry found (packets, bytes,
//     last seen, TCP FIN/RST seen); a miss creates the entry;
//   - for packets not in the reply direction, a lookup of the source address
//     in the `policy` LPM trie: POLICY_DENY drops the packet (counted), an
//     entry with POLICY_ALLOW or no entry lets it through.
// This is the per-packet map work Cilium's datapath does before it
// redirects (its CT and policy maps), not its whole feature set: no NAT, no
// service load balancing, no identity lookup, no CT garbage collection (the
// LRU evicts).

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_RST 0x04
#define IP_MF_OFFSET 0x3fff // more-fragments flag and fragment offset

// Set by the loader before loading: 1 = bare redirect, no CT or policy.
volatile const __u32 bare = 0;

// Set by the loader before loading: 1 = deliver to a local pod with
// bpf_redirect() to the egress of its host-side veth instead of
// bpf_redirect_peer() (the verifier removes the branch not taken).
volatile const __u32 redirect_host = 0;

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
	CNT_CT_NEW = 7,         // CT miss: entry created
	CNT_CT_ESTABLISHED = 8, // CT hit in the original direction
	CNT_CT_REPLY = 9,       // CT hit in the reply direction
	CNT_POLICY_DENIED = 10, // dropped by the policy map
	CNT_REDIRECT_HOST = 11, // sent to a local pod's host-side veth egress with bpf_redirect
	CNT_MAX = 12,
};

// Values of the `policy` map. Keep in sync with hostrouting_linux.go.
enum policy_verdict {
	POLICY_ALLOW = 1,
	POLICY_DENY = 2,
};

struct ct_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct ct_entry {
	__u64 packets;
	__u64 bytes;
	__u64 last_seen_ns;
	__u32 tcp_flags_seen; // FIN/RST seen in either direction
	__u32 pad;
};

// Connection tracking, one entry per connection (original direction).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ct_key);
	__type(value, struct ct_entry);
	__uint(max_entries, 262144);
} ct SEC(".maps");

struct policy_key {
	__u32 prefixlen;
	__be32 addr;
};

// Ingress policy by source prefix -> enum policy_verdict.
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct policy_key);
	__type(value, __u32);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} policy SEC(".maps");

#include "counters.h"

// ifindex (in this node's netns) -> enum iface_kind.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 4096);
} ifaces SEC(".maps");

// counted counts idx and returns verdict.
static __always_inline int counted(__u32 idx, int verdict)
{
	count(idx);
	return verdict;
}

static __always_inline void ct_touch(struct ct_entry *e, __u32 len, __u8 tcp_flags)
{
	__sync_fetch_and_add(&e->packets, 1);
	__sync_fetch_and_add(&e->bytes, len);
	e->last_seen_ns = bpf_ktime_get_ns();
	if (tcp_flags & (TCP_FLAG_FIN | TCP_FLAG_RST))
		e->tcp_flags_seen |= tcp_flags & (TCP_FLAG_FIN | TCP_FLAG_RST);
}

// ct_policy runs the connection-tracking and policy step for a packet about
// to be redirected. It returns 0 to go on, or -1 if policy denies it.
static __always_inline int ct_policy(struct ct_key *key, __u32 len, __u8 tcp_flags)
{
	struct ct_key rev = {
		.saddr = key->daddr, .daddr = key->saddr,
		.sport = key->dport, .dport = key->sport, .proto = key->proto,
	};
	struct policy_key pk = { .prefixlen = 32, .addr = key->saddr };
	struct ct_entry *e, fresh = {};
	__u32 *verdict;

	e = bpf_map_lookup_elem(&ct, key);
	if (!e) {
		e = bpf_map_lookup_elem(&ct, &rev);
		if (e) {
			// Reply direction: allowed by the connection's policy verdict.
			ct_touch(e, len, tcp_flags);
			count(CNT_CT_REPLY);
			return 0;
		}
	}
	verdict = bpf_map_lookup_elem(&policy, &pk);
	if (verdict && *verdict == POLICY_DENY) {
		count(CNT_POLICY_DENIED);
		return -1;
	}
	if (e) {
		ct_touch(e, len, tcp_flags);
		count(CNT_CT_ESTABLISHED);
		return 0;
	}
	fresh.packets = 1;
	fresh.bytes = len;
	fresh.last_seen_ns = bpf_ktime_get_ns();
	fresh.tcp_flags_seen = tcp_flags & (TCP_FLAG_FIN | TCP_FLAG_RST);
	bpf_map_update_elem(&ct, key, &fresh, BPF_ANY);
	count(CNT_CT_NEW);
	return 0;
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
	struct ct_key key = {};
	__u8 tcp_flags = 0;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);

	if ((void *)(iph + 1) > data_end) {
		// Headers not in the linear area (rare on veth): pull them in.
		if (bpf_skb_pull_data(skb, sizeof(*eth) + sizeof(*iph)) < 0)
			return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		eth = data;
		iph = data + sizeof(*eth);
		if ((void *)(iph + 1) > data_end)
			return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);
	}
	if (iph->version != 4 || iph->ihl < 5)
		return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);

	// The 5-tuple for connection tracking (ports 0 for other protocols and
	// for non-first fragments).
	key.saddr = iph->saddr;
	key.daddr = iph->daddr;
	key.proto = iph->protocol;
	if (!bare && (iph->protocol == IPPROTO_TCP || iph->protocol == IPPROTO_UDP) &&
	    !(iph->frag_off & bpf_htons(0x1fff))) {
		__u32 l4off = sizeof(*eth) + (iph->ihl & 0xf) * 4;
		__u32 need = iph->protocol == IPPROTO_TCP ? 14 : 4;
		__u8 *l4 = data + l4off;

		if ((void *)(l4 + 14) > data_end) {
			if (bpf_skb_pull_data(skb, l4off + need) < 0)
				return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);
			data = (void *)(long)skb->data;
			data_end = (void *)(long)skb->data_end;
			eth = data;
			iph = data + sizeof(*eth);
			if ((void *)(iph + 1) > data_end)
				return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);
			l4 = data + l4off;
		}
		if ((void *)(l4 + 4) > data_end)
			return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);
		key.sport = *(__be16 *)l4;
		key.dport = *(__be16 *)(l4 + 2);
		if (iph->protocol == IPPROTO_TCP) {
			if ((void *)(l4 + 14) > data_end)
				return counted(CNT_PASS_NOT_IPV4, TC_ACT_OK);
			tcp_flags = l4[13];
		}
	}

	// A router must not forward a packet whose TTL expires here; the stack
	// drops it and sends ICMP time exceeded.
	if (iph->ttl <= 1)
		return counted(CNT_PASS_TTL, TC_ACT_OK);

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
		return counted(CNT_PASS_FIB, TC_ACT_OK);

	oif = fib.ifindex;
	if (oif == ingress)
		return counted(CNT_PASS_EGRESS, TC_ACT_OK);
	kind = bpf_map_lookup_elem(&ifaces, &oif);
	if (!kind)
		return counted(CNT_PASS_EGRESS, TC_ACT_OK);

	// Connection tracking and policy, as Cilium does before it redirects.
	if (!bare && ct_policy(&key, skb->len, tcp_flags) < 0)
		return TC_ACT_SHOT;

	if (*kind == IFACE_POD && rc == BPF_FIB_LKUP_RET_SUCCESS) {
		// Rewrite L2 as the node's router would (source: the host-side
		// veth, destination: the pod's eth0 from the neighbour table).
		// With redirect_peer the pod's stack would accept the frame
		// anyway, because redirect_peer scrubs the skb to PACKET_HOST,
		// but captures in the pod then show the same MACs as without the
		// program. With bpf_redirect to the host veth's egress the
		// rewrite is required: the pod's eth0 classifies the frame by its
		// destination MAC (eth_type_trans) and drops PACKET_OTHERHOST.
		ip_decrease_ttl(iph);
		__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
		if (redirect_host) {
			// Egress of the host-side veth (flags 0): dev_queue_xmit ->
			// veth_xmit -> the pod's eth0 through netif_rx and the
			// per-CPU backlog. No netfilter hook of the node's IP
			// stack is on this path.
			ret = bpf_redirect(oif, 0);
			if (ret != TC_ACT_REDIRECT)
				return counted(CNT_DROP, TC_ACT_SHOT);
			return counted(CNT_REDIRECT_HOST, TC_ACT_REDIRECT);
		}
		ret = bpf_redirect_peer(oif, 0);
		if (ret != TC_ACT_REDIRECT)
			return counted(CNT_DROP, TC_ACT_SHOT);
		return counted(CNT_REDIRECT_PEER, TC_ACT_REDIRECT);
	}

	// The uplink, or a pod whose neighbour entry is not resolved yet
	// (NO_NEIGH: we have no destination MAC to write). redirect_neigh
	// transmits on oif and lets the kernel resolve/fill L2 from its
	// neighbour table; once resolved, later packets to that pod take the
	// redirect_peer (or redirect_host) path above. With Calico-style
	// static neighbour entries for pods this branch is only taken for the
	// uplink.
	//
	// The next hop from the FIB result (the gateway, or the destination for
	// a directly connected route) is passed explicitly. With a NULL params
	// pointer the kernel would do a second route lookup to find it.
	ip_decrease_ttl(iph);
	nh.nh_family = AF_INET;
	nh.ipv4_nh = fib.ipv4_dst;
	ret = bpf_redirect_neigh(oif, &nh, sizeof(nh), 0);
	if (ret != TC_ACT_REDIRECT)
		return counted(CNT_DROP, TC_ACT_SHOT);
	return counted(CNT_REDIRECT_NEIGH, TC_ACT_REDIRECT);
}

// bpf_fib_lookup, bpf_redirect_neigh and bpf_redirect_peer are GPL-only
// helpers, so the object must declare a GPL-compatible licence.
char __license[] SEC("license") = "Dual MIT/GPL";
