// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// What lb.c (the load-balancer node) and worker.c (the DSR workers) share
// beyond ../headers (packet parsing and NAT rewriting: lbpacket.h): the
// flow hash, the firewall's allow list, the settings user space changes.

#ifndef __CNB_NSLB_H__
#define __CNB_NSLB_H__

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "lbpacket.h"

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
// LB node, as ECMP in front of several LBs needs. nslb.go's FlowHash is
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

#endif /* __CNB_NSLB_H__ */
