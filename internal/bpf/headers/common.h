/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR MIT */
/*
 * Minimal kernel UAPI definitions for cnibench's BPF programs.
 *
 * Hand-written on purpose instead of a generated vmlinux.h (several MB) or the
 * system <linux/...> headers (which need the multiarch <asm/types.h> and therefore
 * a distribution-specific -I path): the programs only use stable UAPI
 * structs (struct __sk_buff, struct bpf_fib_lookup, struct bpf_redir_neigh,
 * struct bpf_tunnel_key, struct bpf_sock_addr, struct ethhdr, struct iphdr),
 * whose layout is ABI and never changes.
 * Field lists are copied from include/uapi/linux/{bpf,if_ether,ip,pkt_cls}.h
 * (Linux 6.1 UAPI). Only append fields here, never reorder.
 */
#ifndef __CNB_COMMON_H__
#define __CNB_COMMON_H__

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;

typedef __u16 __le16;
typedef __u16 __be16;
typedef __u32 __le32;
typedef __u32 __be32;
typedef __u64 __le64;
typedef __u64 __be64;
typedef __u16 __sum16;
typedef __u32 __wsum;

/* include/uapi/linux/bpf.h: map types used by cnibench programs. */
enum bpf_map_type {
	BPF_MAP_TYPE_UNSPEC = 0,
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_LPM_TRIE = 11,
};

/* Map update flags. */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2

/* Map creation flags. */
#define BPF_F_NO_PREALLOC (1U << 0)

/* Address families (include/linux/socket.h). */
#define AF_INET 2
#define AF_INET6 10

/* include/uapi/linux/if_ether.h */
#define ETH_ALEN 6
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

struct ethhdr {
	unsigned char h_dest[ETH_ALEN];
	unsigned char h_source[ETH_ALEN];
	__be16 h_proto;
} __attribute__((packed));

/* include/uapi/linux/ip.h (little-endian bitfield order; cnibench only
 * builds the bpfel target). */
struct iphdr {
	__u8 ihl : 4, version : 4;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
};

/* include/uapi/linux/pkt_cls.h */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7

/* include/uapi/linux/bpf.h (enum tcx_action_base): hand the packet on to
 * the next program attached with TCX, or to the stack when none is. */
#define TCX_NEXT (-1)

/* include/uapi/linux/bpf.h */
#define __bpf_md_ptr(type, name) \
	union {                  \
		type name;       \
		__u64 : 64;      \
	} __attribute__((aligned(8)))

struct bpf_flow_keys;
struct bpf_sock;

struct __sk_buff {
	__u32 len;
	__u32 pkt_type;
	__u32 mark;
	__u32 queue_mapping;
	__u32 protocol;
	__u32 vlan_present;
	__u32 vlan_tci;
	__u32 vlan_proto;
	__u32 priority;
	__u32 ingress_ifindex;
	__u32 ifindex;
	__u32 tc_index;
	__u32 cb[5];
	__u32 hash;
	__u32 tc_classid;
	__u32 data;
	__u32 data_end;
	__u32 napi_id;
	__u32 family;
	__u32 remote_ip4;
	__u32 local_ip4;
	__u32 remote_ip6[4];
	__u32 local_ip6[4];
	__u32 remote_port;
	__u32 local_port;
	__u32 data_meta;
	__bpf_md_ptr(struct bpf_flow_keys *, flow_keys);
	__u64 tstamp;
	__u32 wire_len;
	__u32 gso_segs;
	__bpf_md_ptr(struct bpf_sock *, sk);
	__u32 gso_size;
	__u8 tstamp_type;
	__u32 : 24;
	__u64 hwtstamp;
};

/* bpf_fib_lookup() flags and return codes. */
enum {
	BPF_FIB_LOOKUP_DIRECT = (1U << 0),
	BPF_FIB_LOOKUP_OUTPUT = (1U << 1),
	BPF_FIB_LOOKUP_SKIP_NEIGH = (1U << 2),
	BPF_FIB_LOOKUP_TBID = (1U << 3),
	BPF_FIB_LOOKUP_SRC = (1U << 4),
};

enum {
	BPF_FIB_LKUP_RET_SUCCESS,      /* lookup successful */
	BPF_FIB_LKUP_RET_BLACKHOLE,    /* dest is blackholed; can be dropped */
	BPF_FIB_LKUP_RET_UNREACHABLE,  /* dest is unreachable; can be dropped */
	BPF_FIB_LKUP_RET_PROHIBIT,     /* dest not allowed; can be dropped */
	BPF_FIB_LKUP_RET_NOT_FWDED,    /* packet is not forwarded */
	BPF_FIB_LKUP_RET_FWD_DISABLED, /* fwding is not enabled on ingress */
	BPF_FIB_LKUP_RET_UNSUPP_LWT,   /* fwd requires encapsulation */
	BPF_FIB_LKUP_RET_NO_NEIGH,     /* no neighbor entry for nh */
	BPF_FIB_LKUP_RET_FRAG_NEEDED,  /* fragmentation required to fwd */
	BPF_FIB_LKUP_RET_NO_SRC_ADDR,  /* failed to derive IP src addr */
};

struct bpf_fib_lookup {
	__u8 family;
	__u8 l4_protocol;
	__be16 sport;
	__be16 dport;
	union {
		__u16 tot_len;    /* input: L3 length (0: kernel checks the skb, GSO-aware) */
		__u16 mtu_result; /* output: MTU of the egress route */
	} __attribute__((packed, aligned(2)));
	__u32 ifindex; /* input: ingress ifindex; output: egress ifindex */
	union {
		__u8 tos;
		__be32 flowinfo;
		__u32 rt_metric;
	};
	union {
		__be32 ipv4_src;
		__u32 ipv6_src[4];
	};
	union {
		__be32 ipv4_dst; /* output: next hop (gateway) if the route has one */
		__u32 ipv6_dst[4];
	};
	union {
		struct {
			__be16 h_vlan_proto;
			__be16 h_vlan_TCI;
		};
		__u32 tbid;
	};
	__u8 smac[6];
	__u8 dmac[6];
};

struct bpf_redir_neigh {
	__u32 nh_family;
	union {
		__be32 ipv4_nh;
		__u32 ipv6_nh[4];
	};
};

/* include/uapi/linux/bpf.h: the argument of bpf_skb_set_tunnel_key.
 * remote_ipv4 is in host byte order (the kernel converts it). */
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

/* include/uapi/linux/bpf.h: the context of cgroup sock_addr programs
 * (connect4, sendmsg4, recvmsg4, getpeername4). */
struct bpf_sock_addr {
	__u32 user_family;
	__u32 user_ip4;     /* network byte order */
	__u32 user_ip6[4];
	__u32 user_port;    /* network byte order, in the low 16 bits */
	__u32 family;
	__u32 type;
	__u32 protocol;
	__u32 msg_src_ip4;
	__u32 msg_src_ip6[4];
	__bpf_md_ptr(struct bpf_sock *, sk);
};

#ifndef IPPROTO_TCP
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#endif

#endif /* __CNB_COMMON_H__ */
