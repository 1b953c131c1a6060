//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// socklb: socket-level service load balancing (issue 11's ebpf-socket-lb,
// modelled on Cilium's bpf_sock.c), attached to a cgroup v2 directory:
//
//   - connect4 (TCP and connected UDP) and sendmsg4 (unconnected UDP) look
//     the destination up in `services`; a service's destination is
//     rewritten to one of its backends, chosen at random, before the
//     kernel routes anything, so no packet ever carries the VIP and no
//     DNAT or conntrack entry exists;
//   - the translation is remembered per socket in `revnat` (an LRU keyed
//     by socket cookie and backend), and recvmsg4 (UDP) and getpeername4
//     rewrite the backend back to the VIP, so the application sees the
//     address it connected to.
//
// A service whose backends are all gone rejects connect() (EPERM, counted).

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

#define MAX_BACKENDS 64

// Indexes of `counters`. Keep in sync with socklb_linux.go.
enum counter_idx {
	CNT_XLATE_FWD = 0, // a service destination rewritten to a backend
	CNT_XLATE_REV = 1, // a backend rewritten back to its service (recvmsg, getpeername)
	CNT_NO_BACKEND = 2, // a service without backends: connect refused
	CNT_MAX = 3,
};

// `services` key: the VIP and port (network order) and a slot: slot 0
// holds the service (its backend count), slots 1..count its backend ids.
struct svc_key {
	__u32 vip;
	__u16 port;
	__u16 slot;
};

struct svc_val {
	__u32 count;   // slot 0: number of backends
	__u32 backend; // slots 1..count: index into `backends`
};

struct backend {
	__u32 addr; // network order
	__u16 port; // network order
	__u16 pad;
};

// `revnat` key: the socket and the backend it was sent to.
struct revnat_key {
	__u64 cookie;
	__u32 addr;
	__u16 port;
	__u16 pad;
};

struct revnat_val {
	__u32 vip;
	__u16 port;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct svc_key);
	__type(value, struct svc_val);
	__uint(max_entries, 1); // set by the loader
} services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct backend);
	__uint(max_entries, 1); // set by the loader
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct revnat_key);
	__type(value, struct revnat_val);
	__uint(max_entries, 65536);
} revnat SEC(".maps");

#include "counters.h"

// xlate_fwd rewrites a service destination to a backend. It returns 0
// when ctx is not a service or was translated, -1 when the service has no
// backend (the caller refuses the call).
static __always_inline int xlate_fwd(struct bpf_sock_addr *ctx)
{
	struct svc_key key = {
		.vip = ctx->user_ip4,
		.port = (__u16)ctx->user_port,
		.slot = 0,
	};
	struct svc_val *svc = bpf_map_lookup_elem(&services, &key);
	if (!svc)
		return 0;
	__u32 n = svc->count;
	if (n == 0 || n > MAX_BACKENDS) {
		count(CNT_NO_BACKEND);
		return -1;
	}
	key.slot = (__u16)(bpf_get_prandom_u32() % n) + 1;
	struct svc_val *slot = bpf_map_lookup_elem(&services, &key);
	if (!slot) {
		count(CNT_NO_BACKEND);
		return -1;
	}
	__u32 id = slot->backend;
	struct backend *be = bpf_map_lookup_elem(&backends, &id);
	if (!be || be->addr == 0) {
		count(CNT_NO_BACKEND);
		return -1;
	}
	struct revnat_key rk = {
		.cookie = bpf_get_socket_cookie(ctx),
		.addr = be->addr,
		.port = be->port,
	};
	struct revnat_val rv = {
		.vip = ctx->user_ip4,
		.port = (__u16)ctx->user_port,
	};
	bpf_map_update_elem(&revnat, &rk, &rv, BPF_ANY);
	ctx->user_ip4 = be->addr;
	ctx->user_port = (__u32)be->port;
	count(CNT_XLATE_FWD);
	return 0;
}

// xlate_rev rewrites a backend source or peer back to its service.
static __always_inline void xlate_rev(struct bpf_sock_addr *ctx)
{
	struct revnat_key rk = {
		.cookie = bpf_get_socket_cookie(ctx),
		.addr = ctx->user_ip4,
		.port = (__u16)ctx->user_port,
	};
	struct revnat_val *rv = bpf_map_lookup_elem(&revnat, &rk);
	if (!rv)
		return;
	ctx->user_ip4 = rv->vip;
	ctx->user_port = (__u32)rv->port;
	count(CNT_XLATE_REV);
}

SEC("cgroup/connect4")
int sock4_connect(struct bpf_sock_addr *ctx)
{
	if (ctx->protocol != IPPROTO_TCP && ctx->protocol != IPPROTO_UDP)
		return 1;
	return xlate_fwd(ctx) < 0 ? 0 : 1;
}

SEC("cgroup/sendmsg4")
int sock4_sendmsg(struct bpf_sock_addr *ctx)
{
	if (ctx->protocol != IPPROTO_UDP)
		return 1;
	return xlate_fwd(ctx) < 0 ? 0 : 1;
}

SEC("cgroup/recvmsg4")
int sock4_recvmsg(struct bpf_sock_addr *ctx)
{
	xlate_rev(ctx);
	return 1;
}

SEC("cgroup/getpeername4")
int sock4_getpeername(struct bpf_sock_addr *ctx)
{
	xlate_rev(ctx);
	return 1;
}

char __license[] SEC("license") = "Dual MIT/GPL";
