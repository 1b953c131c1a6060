// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// What lb.c (the load-balancer node) and worker.c (the DSR workers) share:
// packet parsing, NAT rewriting with incremental checksum updates, the
// flow hash, the firewall's allow list, counters. The UAPI definitions
// ../headers/common.h lacks (the tunnel key) are here so that the shared
// headers stay as they are.

#ifndef __CNB_L4LB_H__
#define __CNB_L4LB_H__

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

#define TCX_NEXT (-1)
#define BPF_F_PSEUDO_HDR (1ULL << 4)
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)
#define BPF_F_NO_PREALLOC (1U << 0)
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF

// include/uapi/linux/bpf.h: the argument of bpf_skb_set_tunnel_key.
// remote_ipv4 is in host byte order (the kernel converts it).
struct bpf_tunnel_key {
	__u32 tunnel_id;
	union {
		__u32 remote_ipv4;
		__u32 remote_ipv6[4];
	};
	__u8 tunnel_tos;
	__u8 tunnel_ttl;
	union {
		__u16 tunnel_ext;
		__be16 tunnel_flags;
	};
	__u32 tunnel_label;
	union {
		__u32 local_ipv4;
		__u32 local_ipv6[4];
	};
};

// A flow as seen in one direction (addresses and ports in network order,
// as read from the packet).
struct flow {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct svc_key {
	__u32 vip;  // network order
	__u16 port; // network order
	__u8 proto;
	__u8 pad;
};

// Key of the firewall's allow list (an LPM trie of source prefixes).
struct lpm_key {
	__u32 prefixlen;
	__u32 addr; // network order
};

// settings[0]: what user space changes while the programs run.
struct settings {
	__u32 firewall;      // 1: only sources in `allow` reach a service
	__u8 tunnel_smac[6]; // lb.c, vxlan: inner source MAC (the LB's VXLAN device)
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct lpm_key);
	__type(value, __u32);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct settings);
	__uint(max_entries, 1);
} settings SEC(".maps");

// parse fills f from an Ethernet+IPv4+TCP/UDP packet and returns the L4
// offset, or 0 when the packet is anything else (or a non-first fragment).
static __always_inline __u32 parse(struct __sk_buff *skb, struct flow *f)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl < 5)
		return 0;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return 0;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return 0;
	__u32 l4 = sizeof(*eth) + ip->ihl * 4;
	__u16 *ports = data + l4;
	if ((void *)(ports + 2) > end)
		return 0;
	f->saddr = ip->saddr;
	f->daddr = ip->daddr;
	f->sport = ports[0];
	f->dport = ports[1];
	f->proto = ip->protocol;
	return l4;
}

// rewrite replaces the address at IP header offset addr_off (12: source,
// 16: destination) and the port at L4 offset port_off (0: source, 2:
// destination), fixing the IP checksum and the L4 checksum (pseudo-header
// included; a UDP checksum of zero stays zero).
static __always_inline int rewrite(struct __sk_buff *skb, __u32 l4, __u8 proto, __u32 addr_off,
				   __u32 old_addr, __u32 new_addr, __u32 port_off, __u16 old_port, __u16 new_port)
{
	__u32 ip_off = sizeof(struct ethhdr);
	__u32 csum_off = l4 + (proto == IPPROTO_TCP ? 16 : 6);
	__u64 mangled = proto == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
	if (old_addr != new_addr) {
		if (bpf_l4_csum_replace(skb, csum_off, old_addr, new_addr, BPF_F_PSEUDO_HDR | mangled | sizeof(new_addr)))
			return -1;
		if (bpf_l3_csum_replace(skb, ip_off + 10, old_addr, new_addr, sizeof(new_addr)))
			return -1;
		if (bpf_skb_store_bytes(skb, ip_off + addr_off, &new_addr, sizeof(new_addr), 0))
			return -1;
	}
	if (old_port != new_port) {
		if (bpf_l4_csum_replace(skb, csum_off, old_port, new_port, mangled | sizeof(new_port)))
			return -1;
		if (bpf_skb_store_bytes(skb, l4 + port_off, &new_port, sizeof(new_port), 0))
			return -1;
	}
	return 0;
}

// mix32 is MurmurHash3's finaliser.
static __always_inline __u32 mix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

// flow_hash is the flow's Maglev hash. It is computed from the 5-tuple
// rather than taken from skb->hash: the kernel's hash of a locally sent
// packet is the sending socket's random txhash (re-rolled on
// retransmission timeouts), and a hash of the tuple is the same on every
// LB node, as ECMP in front of several LBs needs. l4lb.go's FlowHash is
// the same function in Go (keep them in sync).
static __always_inline __u32 flow_hash(const struct flow *f)
{
	__u32 h = mix32(f->saddr ^ 0x9e3779b9);
	h = mix32(h ^ f->daddr);
	h = mix32(h ^ (((__u32)f->sport << 16) | f->dport));
	return mix32(h ^ f->proto);
}

// allowed tells whether saddr is in the firewall's allow list.
static __always_inline int allowed(__u32 saddr)
{
	struct lpm_key k = {.prefixlen = 32, .addr = saddr};
	return bpf_map_lookup_elem(&allow, &k) != 0;
}

// get_settings returns settings[0] (never NULL for an array of one entry,
// but the verifier wants the check).
static __always_inline struct settings *get_settings(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&settings, &zero);
}

#endif /* __CNB_L4LB_H__ */
