//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// lb: the load-balancer node of the l4lb lab (a one-armed L4 load
// balancer in the style of Cilium's standalone L4LB), at TCX ingress.
//
//   - lb_ingress (the LB's interface on the external segment): a TCP/UDP
//     packet to a service in `services` is checked against the firewall's
//     allow list when settings.firewall is on, then gets the backend of its
//     flow: the one in `ct_fwd`, or for a new flow the backend in slot
//     flow_hash % maglev_m of the service's Maglev table (recorded in
//     `ct_fwd`). Then, by the load-time constants:
//       snat (dsr = 0): destination rewritten to the backend, source to
//         snat_addr and a port that makes the flow unique towards the
//         backend (the client's own port when free), the reverse recorded
//         in `ct_rev`;
//       dsr: no L3 rewrite: the destination stays the VIP and only the
//         frame's next hop becomes the backend's worker, which DNATs to its
//         local backend and answers the client itself (worker.c);
//     and it leaves towards the backend's worker:
//       direct: bpf_redirect_neigh out of the same interface with the
//         worker's address as next hop (the kernel's neighbour table
//         supplies the MACs);
//       vxlan: the inner MACs set to the LB's and the worker's VXLAN
//         devices, a tunnel key (the worker's address, vni) attached with
//         bpf_skb_set_tunnel_key, and bpf_redirect to the LB's VXLAN device
//         (external/collect_md), which encapsulates, as Cilium does.
//     In snat mode a packet to snat_addr whose flow is in `ct_rev` is a
//     backend's reply: source back to the VIP, destination back to the
//     client, bpf_redirect_neigh to the client (the kernel's route).
//   - lb_tunnel_ingress (the LB's VXLAN device, snat+vxlan): the replies
//     the workers send back through the tunnel, decapsulated: the same
//     reverse translation.
// Everything else passes untouched (TCX_NEXT): ARP, the LB's own traffic,
// the VXLAN packets on their way to the VXLAN device.

#include "nslb.h"

// Load-time constants (set by the loader; lb_linux.go), and maglev_m, the
// Maglev table size (maglev.h).
volatile const __u32 dsr = 0;            // 1: direct server return
volatile const __u32 tunnel = 0;         // 1: VXLAN to the workers
volatile const __u32 ext_ifindex = 0;    // the LB's interface on the external segment
volatile const __u32 tunnel_ifindex = 0; // the LB's VXLAN device (vxlan)
volatile const __u32 snat_addr = 0;      // snat: the LB's source address, network order
volatile const __u32 vni = 0;            // vxlan: the VNI

// SNAT source ports tried after the client's own: SNAT_TRIES ports in
// [SNAT_MIN, SNAT_MIN + SNAT_RANGE), chosen from the flow hash.
#define SNAT_TRIES 8
#define SNAT_MIN 1024
#define SNAT_RANGE 64512

// Indexes of `counters`. Keep in sync with lb_linux.go.
enum counter_idx {
	CNT_NEW = 0,        // a new flow given a backend
	CNT_FWD = 1,        // a client->backend packet translated and sent to its worker
	CNT_REV = 2,        // a backend->client reply translated back (snat only)
	CNT_NO_BACKEND = 3, // a service packet without a usable backend: dropped
	CNT_FW_DROP = 4,    // a service packet from a source the firewall refuses: dropped
	CNT_SNAT_FAIL = 5,  // no free SNAT port for a new flow: dropped
	CNT_MAX = 6,
};

// A backend: the value of `backends` (maglev.h).
struct backend {
	__u32 addr;       // the backend pod, network order
	__u16 port;       // network order
	__u16 pad;
	__u32 node;       // its worker's address on the external segment, network order
	__u8 node_mac[6]; // vxlan: the MAC of the worker's VXLAN device
	__u16 pad2;
};

#include "counters.h"
#include "maglev.h"

// ct_fwd value: the flow's backend and, in snat mode, its source port
// towards the backend.
struct lb_ct {
	struct backend be;
	__u16 snat_port; // network order
	__u16 pad;
};

// ct_rev value: what a backend's reply is translated back to.
struct rev_nat {
	__u32 client;
	__u32 vip;
	__u16 cport;
	__u16 vport;
};

FLOW_MAP(ct_fwd, struct lb_ct);
FLOW_MAP(ct_rev, struct rev_nat);

// new_flow picks the backend of a new flow of service svc, and in snat
// mode its source port, and records both directions. It returns 0, or -1
// when the packet must be dropped (counted).
static __always_inline int new_flow(struct flow *f, struct svc_val *svc, struct lb_ct *ct)
{
	__u32 m = maglev_size(svc);
	if (!m)
		return -1;
	__u32 h = flow_hash(f);
	struct backend *be = maglev_backend(svc, m, h);
	if (!be)
		return -1;
	ct->be = *be;
	ct->snat_port = 0;
	if (!dsr) {
		// The reply flow backend:bport -> snat_addr:port must be unique:
		// BPF_NOEXIST claims a port atomically; another client using the
		// same source port towards the same backend makes us try others.
		struct rev_nat back = {.client = f->saddr, .vip = f->daddr, .cport = f->sport, .vport = f->dport};
		struct flow rev = {.saddr = be->addr, .daddr = snat_addr, .sport = be->port, .proto = f->proto};
		__u16 port = f->sport;
		int ok = 0;
#pragma unroll
		for (int i = 0; i < SNAT_TRIES; i++) {
			rev.dport = port;
			if (bpf_map_update_elem(&ct_rev, &rev, &back, BPF_NOEXIST) == 0) {
				ok = 1;
				break;
			}
			port = bpf_htons(SNAT_MIN + ((h >> 3) + (i + 1) * 7919) % SNAT_RANGE);
		}
		if (!ok) {
			count(CNT_SNAT_FAIL);
			return -1;
		}
		ct->snat_port = port;
	}
	bpf_map_update_elem(&ct_fwd, f, ct, BPF_ANY);
	count(CNT_NEW);
	return 0;
}

// to_tunnel hands a packet to the LB's VXLAN device with the worker as the
// tunnel's remote end. The inner frame is addressed to the worker's VXLAN
// device, so that the worker's stack takes it as its own after
// decapsulation.
static __always_inline int to_tunnel(struct __sk_buff *skb, struct backend *be, struct settings *st)
{
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, be->node_mac, ETH_ALEN);
	__builtin_memcpy(macs + ETH_ALEN, st->tunnel_smac, ETH_ALEN);
	if (bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0))
		return TC_ACT_SHOT;
	struct bpf_tunnel_key key = {
		.tunnel_id = vni,
		.remote_ipv4 = bpf_ntohl(be->node),
		.tunnel_ttl = 64,
	};
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0))
		return TC_ACT_SHOT;
	return bpf_redirect(tunnel_ifindex, 0);
}

static __always_inline int forward(struct __sk_buff *skb, __u32 l4, struct flow *f)
{
	struct svc_key sk = {.vip = f->daddr, .port = f->dport, .proto = f->proto};
	struct svc_val *svc = bpf_map_lookup_elem(&services, &sk);
	if (!svc)
		return TCX_NEXT;
	struct settings *st = get_settings();
	if (!st)
		return TC_ACT_SHOT;
	// The firewall sees every service packet, not only new flows: turning
	// it on cuts established flows from refused sources too.
	if (st->firewall && !allowed(f->saddr)) {
		count(CNT_FW_DROP);
		return TC_ACT_SHOT;
	}
	struct lb_ct ct;
	struct lb_ct *known = bpf_map_lookup_elem(&ct_fwd, f);
	if (known)
		ct = *known;
	else if (new_flow(f, svc, &ct))
		return TC_ACT_SHOT;
	if (!dsr) {
		if (rewrite(skb, l4, f->proto, 12, f->saddr, snat_addr, 0, f->sport, ct.snat_port))
			return TC_ACT_SHOT;
		if (rewrite(skb, l4, f->proto, 16, f->daddr, ct.be.addr, 2, f->dport, ct.be.port))
			return TC_ACT_SHOT;
	}
	count(CNT_FWD);
	if (tunnel)
		return to_tunnel(skb, &ct.be, st);
	struct bpf_redir_neigh nh = {.nh_family = AF_INET, .ipv4_nh = ct.be.node};
	return bpf_redirect_neigh(ext_ifindex, &nh, sizeof(nh), 0);
}

// reverse translates a backend's reply (snat) back to VIP -> client and
// sends it to the client by the LB's route (FLOWI_FLAG_ANYSRC: the VIP
// need not be a local address).
static __always_inline int reverse(struct __sk_buff *skb, __u32 l4, struct flow *f)
{
	struct rev_nat *r = bpf_map_lookup_elem(&ct_rev, f);
	if (!r)
		return TCX_NEXT;
	struct rev_nat back = *r;
	if (rewrite(skb, l4, f->proto, 12, f->saddr, back.vip, 0, f->sport, back.vport))
		return TC_ACT_SHOT;
	if (rewrite(skb, l4, f->proto, 16, f->daddr, back.client, 2, f->dport, back.cport))
		return TC_ACT_SHOT;
	count(CNT_REV);
	return bpf_redirect_neigh(ext_ifindex, 0, 0, 0);
}

SEC("tcx/ingress")
int lb_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	__u32 l4 = parse(skb, &f);
	if (!l4)
		return TCX_NEXT;
	if (!dsr && !tunnel && f.daddr == snat_addr)
		return reverse(skb, l4, &f);
	return forward(skb, l4, &f);
}

SEC("tcx/ingress")
int lb_tunnel_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	__u32 l4 = parse(skb, &f);
	if (!l4 || dsr || f.daddr != snat_addr)
		return TCX_NEXT;
	return reverse(skb, l4, &f);
}

// bpf_redirect_neigh and bpf_skb_set_tunnel_key need a GPL-compatible
// licence.
char __license[] SEC("license") = "Dual MIT/GPL";
