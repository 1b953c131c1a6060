//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// nscpu: charge the kernel's network-receive processing time to the network
// namespace it happens in. See README.md for why these hooks.
//
// BTF tracepoints (tp_btf) cut each CPU's receive work into segments:
//
//   netif_receive_skb(skb)       fired by __netif_receive_skb_core once per
//                                skb, before tc ingress, netfilter, IP
//                                forwarding or local delivery: opens a
//                                segment charged to skb->dev's namespace
//                                and closes the previous one;
//   napi_gro_receive_entry(skb)  an skb entering GRO in a NAPI poll (veth
//                                with XDP or GRO on): opens a segment for
//                                its namespace (no packet counted: the skb
//                                reaches netif_receive_skb later);
//   napi_poll(napi)              after each NAPI poll (the backlog, a veth's
//                                ring; threaded and busy polling too),
//   netif_receive_skb_exit,      after a receive called outside NAPI
//   netif_receive_skb_list_exit  (process context, e.g. tun),
//   softirq_entry/_exit          around every softirq:
//                                close the open segment.
//
// So a segment spans one skb's whole receive in a namespace, including the
// transmit into the next veth (which only enqueues to a backlog), up to the
// next skb or the end of the poll. Receives do not interleave on a CPU
// (softirq and BH-disabled code is not preempted), so segments never
// overlap and nothing is counted twice.
//
// softirq_entry/_exit also time the NET_RX softirq as a whole, so that the
// receive time outside every segment (NAPI and backlog bookkeeping, XDP
// before GRO) can be reported.

#include "common.h"
#include "bpf_helpers.h"

#define NET_RX_SOFTIRQ 3            // include/linux/interrupt.h (stable)
#define MAX_SEGMENT_NS 50000000ULL // a longer segment is stale: dropped

// Kernel types, only the fields used. preserve_access_index makes clang emit
// CO-RE relocations, which the loader resolves against the running kernel's
// BTF, so the layout here does not matter.
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
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
};
#pragma clang attribute pop

// Indexes of cpu_state.events; keep in sync with nscpu_linux.go.
enum event_idx {
	EV_RECEIVE = 0, // netif_receive_skb
	EV_GRO = 1,     // napi_gro_receive_entry
	EV_POLL = 2,    // napi_poll
	EV_EXIT = 3,    // netif_receive_skb{,_list}_exit
	EV_MAX = 4,
};

// Per-CPU state and counters (one element of a per-CPU array); Go reads
// the counters.
struct cpu_state {
	__u64 since; // open segment: its start (bpf_ktime_get_ns)
	__u64 skb;   // open segment: its skb and device, to recognise a
	__u64 dev;   // nested receive of the same packet (bridge)
	__u32 inum;  // open segment: netns inode charged
	__u32 pkts;  // open segment: packets to count when it closes
	__u32 open;
	__u32 in_rx;   // inside the NET_RX softirq
	__u64 rx_start;
	__u64 events[EV_MAX];
	__u64 segments;     // segments charged
	__u64 rx_ns;        // time in the NET_RX softirq
	__u64 rx_runs;      // NET_RX softirq runs
	__u64 rx_inside_ns; // part of rx_ns inside segments
	__u64 stale;        // segments longer than MAX_SEGMENT_NS, dropped
	__u64 map_full;     // charges lost: usage map full
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

// Per-CPU usage keyed by netns inode (0: the device's namespace was not
// readable).
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

// The netns inode of a device reached through BTF pointers (a tp_btf
// program's arguments): plain loads, which the verifier turns into
// fault-tolerant ones.
static __always_inline __u32 dev_inum(struct net_device *dev)
{
	if (!dev)
		return 0;
	struct net *net = dev->nd_net.net;
	if (!net)
		return 0;
	return net->ns.inum;
}

// close charges the open segment, if any, up to now.
static __always_inline void seg_close(struct cpu_state *st, __u64 now)
{
	if (!st->open)
		return;
	st->open = 0;
	__u64 ns = now - st->since;
	if (ns > MAX_SEGMENT_NS) {
		// Left open by a path without a closing event and closed only
		// by the next one: the time is not receive work.
		st->stale++;
		ns = 0;
	}
	if (st->in_rx)
		st->rx_inside_ns += ns;
	st->segments++;
	__u32 inum = st->inum;
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
	// A per-CPU value, and the programs never run concurrently on one
	// CPU for one state (softirq or BH-disabled context): no atomics.
	u->ns += ns;
	u->packets += st->pkts;
}

static __always_inline void seg_open(struct sk_buff *skb, __u32 counted, __u32 ev)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_state *st = cpu_state();
	if (!st)
		return;
	struct net_device *dev = skb->dev;
	__u32 inum = dev_inum(dev);
	__u32 pkts = counted;
	// The same skb received again in the same namespace by another
	// device, with no poll ending in between: a nested receive of one
	// packet (a bridge port hands the frame to the bridge device with
	// netif_receive_skb). Count the packet once.
	if (st->open && st->skb == (__u64)skb && st->inum == inum && st->dev != (__u64)dev)
		pkts = 0;
	seg_close(st, now);
	st->events[ev & (EV_MAX - 1)]++;
	st->since = now;
	st->skb = (__u64)skb;
	st->dev = (__u64)dev;
	st->inum = inum;
	st->pkts = pkts;
	st->open = 1;
}

static __always_inline void end(__u32 ev)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_state *st = cpu_state();
	if (!st)
		return;
	st->events[ev & (EV_MAX - 1)]++;
	seg_close(st, now);
}

SEC("tp_btf/netif_receive_skb")
int on_receive(__u64 *ctx)
{
	seg_open((struct sk_buff *)ctx[0], 1, EV_RECEIVE);
	return 0;
}

SEC("tp_btf/napi_gro_receive_entry")
int on_gro(__u64 *ctx)
{
	seg_open((struct sk_buff *)ctx[0], 0, EV_GRO);
	return 0;
}

SEC("tp_btf/napi_poll")
int on_poll(__u64 *ctx)
{
	end(EV_POLL);
	return 0;
}

SEC("tp_btf/netif_receive_skb_exit")
int on_receive_exit(__u64 *ctx)
{
	end(EV_EXIT);
	return 0;
}

SEC("tp_btf/netif_receive_skb_list_exit")
int on_list_exit(__u64 *ctx)
{
	end(EV_EXIT);
	return 0;
}

SEC("tp_btf/softirq_entry")
int on_softirq_entry(__u64 *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_state *st = cpu_state();
	if (!st)
		return 0;
	// Softirqs do not nest and no receive is open when one starts
	// (segments opened in process context end with an exit event):
	// anything open here lost its closing event.
	seg_close(st, now);
	if ((__u32)ctx[0] == NET_RX_SOFTIRQ) {
		st->in_rx = 1;
		st->rx_start = now;
	}
	return 0;
}

SEC("tp_btf/softirq_exit")
int on_softirq_exit(__u64 *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_state *st = cpu_state();
	if (!st)
		return 0;
	seg_close(st, now);
	if ((__u32)ctx[0] == NET_RX_SOFTIRQ && st->in_rx) {
		st->in_rx = 0;
		st->rx_ns += now - st->rx_start;
		st->rx_runs++;
	}
	return 0;
}

char __license[] SEC("license") = "Dual MIT/GPL";
