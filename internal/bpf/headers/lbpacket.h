// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// lbpacket.h: what the TC service load balancer (internal/bpf/tclb) and
// the L4 load balancer (internal/bpf/nslb) share: a flow's 5-tuple, their
// connection tables' definition, a service's key, the parser of Ethernet+IPv4+TCP/UDP packets and the NAT
// rewrite with incremental checksum updates. Include after common.h,
// bpf_helpers.h and bpf_endian.h.

#ifndef __CNB_LBPACKET_H__
#define __CNB_LBPACKET_H__

#define BPF_F_PSEUDO_HDR (1ULL << 4)
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF

// A flow as seen in one direction (addresses and ports in network order).
struct flow {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
};

// FLOW_MAP defines a connection table: flow -> what the program keeps of
// it, an LRU of 262,144 flows (the least recently used goes when it is
// full).
#define FLOW_MAP(name, value_type)                   \
	struct {                                     \
		__uint(type, BPF_MAP_TYPE_LRU_HASH); \
		__type(key, struct flow);            \
		__type(value, value_type);           \
		__uint(max_entries, 262144);         \
	} name SEC(".maps")

// A service: its VIP, port and protocol (the key of `services`).
struct svc_key {
	__u32 vip;  // network order
	__u16 port; // network order
	__u8 proto;
	__u8 pad;
};

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

#endif // __CNB_LBPACKET_H__
