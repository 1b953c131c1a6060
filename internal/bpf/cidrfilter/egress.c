//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// egress: cnibench's eBPF egress filters (issue 10, seed 004).
//
// Attached at TCX ingress of a pod's node-side veth: every IPv4 packet the
// pod sends is checked against a set of deny CIDRs by its destination
// address. A match is counted and dropped (TC_ACT_SHOT); anything else is
// counted and handed on (TCX_NEXT, so a datapath program attached after this
// one still runs, and the stack handles the packet when none is).
//
// Two programs, one per lookup structure:
//   - egress_lpm: one LPM trie (`lpm`), the kernel's longest-prefix match;
//   - egress_hash: one hash map (`hash`) keyed by {prefix length, masked
//     address}, probed once per prefix length present in the set, longest
//     first (the lengths are listed by user space in `hash_lens`): the
//     "hash map per prefix length" layout, with the per-length maps folded
//     into one map whose key carries the length.
// The loader loads only the program and maps of the mechanism it runs and
// sets max_entries of `lpm` / `hash` from the number of CIDRs.

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

#define MAX_PREFIXLEN 32

// Indexes of the `counters` map. Keep in sync with cidrfilter_linux.go.
enum counter_idx {
	CNT_DROPPED = 0,    // destination in a deny CIDR: dropped
	CNT_PASSED = 1,     // IPv4, destination not denied: passed on
	CNT_NOT_IPV4 = 2,   // not IPv4 or truncated: passed on unchecked
	CNT_MAX = 3,
};

// Key of both `lpm` and `hash`: prefix length in host order first (the LPM
// trie's layout), then the address in network order. In `hash` the address
// is masked to the prefix length.
struct prefix_key {
	__u32 prefixlen;
	__u8 addr[4];
};

// The prefix lengths present in `hash`, longest first: len[0..n-1].
struct hash_lens {
	__u32 n;
	__u8 len[MAX_PREFIXLEN + 1];
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct prefix_key);
	__type(value, __u8);
	__uint(max_entries, 1); // set by the loader
	__uint(map_flags, BPF_F_NO_PREALLOC);
} lpm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct prefix_key);
	__type(value, __u8);
	__uint(max_entries, 1); // set by the loader
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct hash_lens);
	__uint(max_entries, 1);
} hash_lens SEC(".maps");

#include "counters.h"

// dest_ipv4 returns 0 and the packet's IPv4 destination in *daddr, or -1 for
// a packet that is not (complete) IPv4.
static __always_inline int dest_ipv4(struct __sk_buff *skb, __be32 *daddr)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > data_end)
		return -1;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return -1;
	*daddr = ip->daddr;
	return 0;
}

static __always_inline int verdict(int denied)
{
	if (denied) {
		count(CNT_DROPPED);
		return TC_ACT_SHOT;
	}
	count(CNT_PASSED);
	return TCX_NEXT;
}

SEC("tc")
int egress_lpm(struct __sk_buff *skb)
{
	struct prefix_key key = {.prefixlen = MAX_PREFIXLEN};
	__be32 daddr;

	if (dest_ipv4(skb, &daddr) < 0) {
		count(CNT_NOT_IPV4);
		return TCX_NEXT;
	}
	__builtin_memcpy(key.addr, &daddr, 4);
	return verdict(bpf_map_lookup_elem(&lpm, &key) != NULL);
}

SEC("tc")
int egress_hash(struct __sk_buff *skb)
{
	struct prefix_key key = {};
	struct hash_lens *lens;
	__u32 zero = 0, i;
	__be32 daddr, masked;
	__u32 host;

	if (dest_ipv4(skb, &daddr) < 0) {
		count(CNT_NOT_IPV4);
		return TCX_NEXT;
	}
	lens = bpf_map_lookup_elem(&hash_lens, &zero);
	if (!lens)
		return verdict(0);
	host = bpf_ntohl(daddr);
	for (i = 0; i <= MAX_PREFIXLEN; i++) {
		__u32 pl;

		if (i >= lens->n)
			break;
		pl = lens->len[i];
		if (pl > MAX_PREFIXLEN)
			break;
		masked = pl == 0 ? 0 : bpf_htonl(host & (0xffffffffU << (MAX_PREFIXLEN - pl)));
		key.prefixlen = pl;
		__builtin_memcpy(key.addr, &masked, 4);
		if (bpf_map_lookup_elem(&hash, &key))
			return verdict(1);
	}
	return verdict(0);
}

char __license[] SEC("license") = "Dual MIT/GPL";
