//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// nscpu: charge the kernel's network-receive processing time to the network
// namespace it happens in (see README.md for the choice of functions).
//
// fentry/fexit pairs bracket three kernel functions:
//
//   __netif_receive_skb(skb)             one skb from the per-CPU backlog
//                                        (netif_rx: veth, netkit, loopback)
//                                        or from netif_receive_skb();
//   __netif_receive_skb_list_core(head)  a list of skbs of one device from
//                                        GRO / netif_receive_skb_list()
//                                        (veth in NAPI mode, i.e. with XDP or
//                                        GRO on);
//   veth_poll(napi)                      a veth NAPI poll: XDP, GRO and the
//                                        ring, around the list receive.
//
// Each bracket covers the whole receive of its skbs: tc ingress (TCX),
// netfilter, IP forwarding or local delivery up to the socket, and the
// transmit into the next veth (which only enqueues to the backlog). The
// namespace is that of the receiving device (skb->dev, the first skb's dev,
// napi->dev) at entry.
//
// Brackets can nest (a bridge port's receive calls netif_receive_skb() for
// the bridge device; a list receive runs inside veth_poll). A per-CPU stack
// gives each bracket its own time: a bracket is charged its elapsed time
// minus that of the brackets nested in it, so nothing is counted twice and
// the total equals the outermost brackets' time. Packets are counted by the
// per-skb brackets, except when the enclosing per-skb bracket is already in
// the same namespace (a frame received by a bridge port and then by the
// bridge counts once).
//
// net_rx_action (the NET_RX softirq handler) is bracketed too, per CPU, to
// measure the softirq time spent outside the per-namespace brackets (NAPI
// and backlog bookkeeping, RPS, budget handling).

#include "common.h"
#include "bpf_helpers.h"

#define MAX_DEPTH 8   // stack frames kept per CPU (a power of two)
#define DEPTH_LIMIT 32 // deeper than this the state is considered corrupt
#define MAX_LIST 256  // skbs counted per list receive

// Kernel types, only the fields used. preserve_access_index makes clang emit
// CO-RE relocations, which the loader resolves against the running kernel's
// BTF, so the offsets here do not matter.
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct list_head {
	struct list_head *next;
};

struct ns_common {
	unsigned int inum;
};

struct net {
	struct ns_common ns;
};

typedef struct {
	struct net *net;
} possible_net_t;

struct net_device {
	possible_net_t nd_net;
};

struct sk_buff {
	struct net_device *dev;
	struct list_head list;
};

struct napi_struct {
	struct net_device *dev;
};
#pragma clang attribute pop

enum frame_kind {
	KIND_SKB = 0,  // __netif_receive_skb
	KIND_LIST = 1, // __netif_receive_skb_list_core
	KIND_POLL = 2, // veth_poll
	KIND_MAX = 3,
};

struct frame {
	__u64 start; // bpf_ktime_get_ns() at entry
	__u64 child; // ns of the brackets nested in this one
	__u64 tag;   // the call's first argument, matched at exit
	__u32 inum;  // netns inode charged
	__u32 pkts;  // skbs counted at exit
	__u32 kind;
	__u32 pad;
};

// Per-CPU state and counters (one element of a per-CPU array). Go reads the
// counters; keep in sync with nscpu_linux.go.
struct cpu_state {
	__u32 depth; // brackets open on this CPU
	__u32 in_rx; // inside net_rx_action
	__u64 rx_start;
	__u64 calls[KIND_MAX]; // brackets charged, per kind
	__u64 rx_ns;           // time in net_rx_action
	__u64 rx_runs;         // net_rx_action calls
	__u64 rx_inside_ns;    // part of rx_ns inside the outermost brackets
	__u64 unmatched;       // exits without their entry, entries without exit
	__u64 too_deep;        // brackets past MAX_DEPTH (charged to the parent)
	__u64 map_full;        // charges lost: usage map full
	struct frame stack[MAX_DEPTH];
};

struct usage {
	__u64 ns;
	__u64 packets;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} state SEC(".maps");

// Per-CPU usage keyed by netns inode (0: namespace not readable).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct usage);
} netns_usage SEC(".maps");

static __always_inline struct cpu_state *cpu_state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&state, &zero);
}

// The netns inode of a device reached through BTF pointers (a tracing
// program's arguments): plain loads, which the verifier turns into
// fault-tolerant ones (a NULL device reads as 0).
static __always_inline __u32 dev_inum(struct net_device *dev)
{
	if (!dev)
		return 0;
	struct net *net = dev->nd_net.net;
	if (!net)
		return 0;
	return net->ns.inum;
}

// The same through bpf_probe_read_kernel, for a pointer the verifier does
// not know the type of (an skb found by walking a list).
static __always_inline __u32 dev_inum_probe(struct net_device *dev)
{
	struct net *net = 0;
	__u32 inum = 0;
	if (!dev || bpf_probe_read_kernel(&net, sizeof(net), &dev->nd_net.net) || !net)
		return 0;
	bpf_probe_read_kernel(&inum, sizeof(inum), &net->ns.inum);
	return inum;
}

static __always_inline void enter(__u64 tag, __u32 kind, __u32 inum, __u32 pkts)
{
	struct cpu_state *st = cpu_state();
	if (!st)
		return;
	__u32 d = st->depth;
	if (d >= MAX_DEPTH) {
		// Keep entries and exits balanced; the time goes to the parent.
		if (d >= DEPTH_LIMIT) {
			st->depth = 0;
			st->unmatched += d;
			return;
		}
		st->depth = d + 1;
		st->too_deep++;
		return;
	}
	if (d > 0 && kind != KIND_POLL) {
		struct frame *p = &st->stack[(d - 1) & (MAX_DEPTH - 1)];
		if (p->kind != KIND_POLL && p->inum == inum)
			pkts = 0; // the enclosing receive already counted it here
	}
	struct frame *f = &st->stack[d & (MAX_DEPTH - 1)];
	f->tag = tag;
	f->kind = kind;
	f->inum = inum;
	f->pkts = pkts;
	f->child = 0;
	st->depth = d + 1;
	f->start = bpf_ktime_get_ns();
}

static __always_inline void charge(struct cpu_state *st, __u32 inum, __u64 ns, __u32 pkts)
{
	struct usage *u = bpf_map_lookup_elem(&netns_usage, &inum);
	if (!u) {
		struct usage zero = {};
		bpf_map_update_elem(&netns_usage, &inum, &zero, BPF_NOEXIST);
		u = bpf_map_lookup_elem(&netns_usage, &inum);
		if (!u) {
			st->map_full++;
			return;
		}
	}
	// Per-CPU value, and brackets on one CPU never run concurrently
	// (softirq or BH-disabled context): no atomics needed.
	u->ns += ns;
	u->packets += pkts;
}

static __always_inline void leave(__u64 tag, __u32 kind)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_state *st = cpu_state();
	if (!st)
		return;
	__u32 d = st->depth;
	if (d == 0)
		return; // entered before the fentry program was attached
	if (d > MAX_DEPTH) {
		st->depth = d - 1; // a frame that did not fit (too_deep)
		return;
	}
	// The frame is normally on top. If not, look down the stack: a frame
	// above the match lost its exit; no match means this call's entry was
	// not seen.
	__u32 top = d;
	__u32 found = 0;
#pragma unroll
	for (__u32 i = 0; i < MAX_DEPTH; i++) {
		if (i < top) {
			struct frame *c = &st->stack[(top - 1 - i) & (MAX_DEPTH - 1)];
			if (c->tag == tag && c->kind == kind) {
				found = top - i;
				break;
			}
		}
	}
	if (!found) {
		st->unmatched++;
		return;
	}
	if (found != top)
		st->unmatched += top - found;
	struct frame *f = &st->stack[(found - 1) & (MAX_DEPTH - 1)];
	__u64 elapsed = now - f->start;
	__u64 own = elapsed > f->child ? elapsed - f->child : 0;
	if (kind < KIND_MAX)
		st->calls[kind]++;
	charge(st, f->inum, own, f->pkts);
	st->depth = found - 1;
	if (found > 1)
		st->stack[(found - 2) & (MAX_DEPTH - 1)].child += elapsed;
	else if (st->in_rx)
		st->rx_inside_ns += elapsed;
}

SEC("fentry/__netif_receive_skb")
int rx_skb_enter(__u64 *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx[0];
	enter(ctx[0], KIND_SKB, dev_inum(skb->dev), 1);
	return 0;
}

SEC("fexit/__netif_receive_skb")
int rx_skb_exit(__u64 *ctx)
{
	leave(ctx[0], KIND_SKB);
	return 0;
}

SEC("fentry/__netif_receive_skb_list_core")
int rx_list_enter(__u64 *ctx)
{
	struct list_head *head = (struct list_head *)ctx[0];
	struct list_head *p = 0;
	__u32 n = 0;
	__u32 inum = 0;
	// Walk the list with probe reads (the entries are sk_buffs, whose type
	// the verifier cannot follow from a list_head).
	if (bpf_probe_read_kernel(&p, sizeof(p), &head->next))
		p = 0;
	if (p && p != head) {
		struct sk_buff *skb = (struct sk_buff *)((char *)p - __builtin_preserve_field_info(((struct sk_buff *)0)->list, 0 /* BPF_FIELD_BYTE_OFFSET */));
		struct net_device *dev = 0;
		if (!bpf_probe_read_kernel(&dev, sizeof(dev), &skb->dev))
			inum = dev_inum_probe(dev);
	}
	for (__u32 i = 0; i < MAX_LIST; i++) {
		if (!p || p == head)
			break;
		n++;
		if (bpf_probe_read_kernel(&p, sizeof(p), &p->next))
			break;
	}
	enter(ctx[0], KIND_LIST, inum, n);
	return 0;
}

SEC("fexit/__netif_receive_skb_list_core")
int rx_list_exit(__u64 *ctx)
{
	leave(ctx[0], KIND_LIST);
	return 0;
}

SEC("fentry/veth_poll")
int veth_poll_enter(__u64 *ctx)
{
	struct napi_struct *napi = (struct napi_struct *)ctx[0];
	enter(ctx[0], KIND_POLL, dev_inum(napi->dev), 0);
	return 0;
}

SEC("fexit/veth_poll")
int veth_poll_exit(__u64 *ctx)
{
	leave(ctx[0], KIND_POLL);
	return 0;
}

SEC("fentry/net_rx_action")
int net_rx_enter(__u64 *ctx)
{
	struct cpu_state *st = cpu_state();
	if (!st)
		return 0;
	st->in_rx = 1;
	st->rx_start = bpf_ktime_get_ns();
	return 0;
}

SEC("fexit/net_rx_action")
int net_rx_exit(__u64 *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_state *st = cpu_state();
	if (!st || !st->in_rx)
		return 0;
	st->in_rx = 0;
	st->rx_ns += now - st->rx_start;
	st->rx_runs++;
	return 0;
}

char __license[] SEC("license") = "Dual MIT/GPL";
