//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// tclb: per-packet service load balancing in TC (issue 11's ebpf-tc-lb,
// the datapath Cilium uses where socket-level LB does not apply): DNAT
// and reverse NAT on a pod's node-side veth, with BPF connection maps
// instead of the kernel's conntrack.
//
//   - lb_ingress (TCX ingress: packets the pod sends): a TCP/UDP packet
//     whose flow is in `ct_fwd` goes to the backend recorded there; a new
//     flow to a service in `services` gets a backend from the service's
//     Maglev table (slot = the skb's flow hash % maglev_m), recorded in
//     `ct_fwd` and, reversed, in `ct_rev`. The destination address and
//     port are rewritten, the IP and L4 checksums updated incrementally.
//   - lb_egress (TCX egress: packets towards the pod): a packet of a
//     flow in `ct_rev` gets its source rewritten from the backend back to
//     the VIP.
//   - Hairpin (a pod reaching its own service, as Cilium does it): when the
//     backend is the sending pod itself, DNAT alone would hand the pod a
//     packet from its own address, which it drops as martian. lb_ingress
//     also rewrites the source to hairpin_addr and sends the packet back
//     out of the device it came in on (bpf_redirect, no node routing: the
//     node has no route to hairpin_addr and may rp_filter). The pod's reply
//     (pod:bport -> hairpin_addr:cport) comes in on the same device's
//     ingress, is translated to VIP:vport -> pod:cport and sent back out
//     the same way. Both directions are in `ct_fwd` (both enter at
//     ingress), marked by `nat.kind`, so the plain path pays one
//     comparison.
// Everything else passes untouched (TCX_NEXT).

#include "common.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "lbpacket.h"

// The hairpin source address, network order (set by the loader from
// HairpinAddr; 169.254.42.1, Cilium's IPV4_LOOPBACK, by default).
volatile const __u32 hairpin_addr = bpf_htonl(0xa9fe2a01);

// Indexes of `counters`. Keep in sync with tclb.go's cnt* constants
// (TestCountersMatchC checks).
enum counter_idx {
	CNT_NEW = 0,        // a new flow to a service: backend chosen
	CNT_FWD = 1,        // a packet of a known flow rewritten to its backend
	CNT_REV = 2,        // a reply rewritten back to the VIP
	CNT_NO_BACKEND = 3, // a service packet with no usable backend: dropped
	CNT_HAIRPIN = 4,    // a new flow whose backend is its own source: hairpinned
	CNT_MAX = 5,
};

// A backend: the value of `backends` (maglev.h).
struct backend {
	__u32 addr; // network order
	__u16 port; // network order
	__u16 pad;
};

#include "counters.h"
#include "maglev.h"

// ct_fwd: a flow entering at ingress -> what to do with it; ct_rev:
// backend's reply flow -> the VIP to restore as its source.
//
// kind NAT_DNAT (a client flow to the VIP): addr:port is the backend.
// NAT_HAIRPIN (a pod's flow to its own service): addr:port is the backend
// (the pod), and the source becomes hairpin_addr. NAT_HAIRPIN_REPLY (the
// pod's reply to hairpin_addr): addr:port is the VIP to restore as the
// source, and the destination becomes the pod's address again.
enum nat_kind {
	NAT_DNAT = 0,
	NAT_HAIRPIN = 1,
	NAT_HAIRPIN_REPLY = 2,
};

struct nat {
	__u32 addr;
	__u16 port;
	__u16 kind;
};

FLOW_MAP(ct_fwd, struct nat);
FLOW_MAP(ct_rev, struct nat);

// swap_macs turns a packet that came in on a device around: the pod's
// frame to the node's MAC becomes the node's frame to the pod's MAC (else
// the pod would see PACKET_OTHERHOST and drop it).
static __always_inline int swap_macs(struct __sk_buff *skb)
{
	__u8 macs[2 * ETH_ALEN];
	if (bpf_skb_load_bytes(skb, 0, macs, sizeof(macs)))
		return -1;
	__u8 swapped[2 * ETH_ALEN];
	__builtin_memcpy(swapped, macs + ETH_ALEN, ETH_ALEN);
	__builtin_memcpy(swapped + ETH_ALEN, macs, ETH_ALEN);
	return bpf_skb_store_bytes(skb, 0, swapped, sizeof(swapped), 0);
}

// hairpin_out rewrites f's source to saddr:sport and its destination to
// daddr:dport, and sends the packet back out of the device it came in on,
// where the pod, both ends of a hairpin flow, lives. The node's routing is
// left out: it would only send the packet back out the same device, and
// it has no route to hairpin_addr, so rp_filter could drop the packet.
static __always_inline int hairpin_out(struct __sk_buff *skb, __u32 l4, struct flow *f,
				       __u32 saddr, __u16 sport, __u32 daddr, __u16 dport)
{
	if (rewrite(skb, l4, f->proto, 12, f->saddr, saddr, 0, f->sport, sport))
		return TC_ACT_SHOT;
	if (rewrite(skb, l4, f->proto, 16, f->daddr, daddr, 2, f->dport, dport))
		return TC_ACT_SHOT;
	if (swap_macs(skb))
		return TC_ACT_SHOT;
	return bpf_redirect(skb->ifindex, 0);
}

// hairpin_known handles a packet of a hairpin flow already in ct_fwd.
static __always_inline int hairpin_known(struct __sk_buff *skb, __u32 l4, struct flow *f, struct nat *to)
{
	if (to->kind == NAT_HAIRPIN) {
		count(CNT_FWD);
		return hairpin_out(skb, l4, f, hairpin_addr, f->sport, to->addr, to->port);
	}
	// NAT_HAIRPIN_REPLY: pod:bport -> hairpin:cport becomes VIP:vport -> pod:cport.
	count(CNT_REV);
	return hairpin_out(skb, l4, f, to->addr, to->port, f->saddr, f->dport);
}

// hairpin_new records a new flow whose backend be is its own source, in
// both directions (the reply also enters at ingress, so both go in ct_fwd),
// and sends the first packet back to the pod.
static __always_inline int hairpin_new(struct __sk_buff *skb, __u32 l4, struct flow *f, struct backend *be)
{
	__u32 hp = hairpin_addr;
	struct nat fwd = {.addr = be->addr, .port = be->port, .kind = NAT_HAIRPIN};
	struct flow reply = {
		.saddr = be->addr, .daddr = hp,
		.sport = be->port, .dport = f->sport, .proto = f->proto,
	};
	struct nat back = {.addr = f->daddr, .port = f->dport, .kind = NAT_HAIRPIN_REPLY};
	bpf_map_update_elem(&ct_fwd, f, &fwd, BPF_ANY);
	bpf_map_update_elem(&ct_fwd, &reply, &back, BPF_ANY);
	count(CNT_NEW);
	count(CNT_HAIRPIN);
	return hairpin_out(skb, l4, f, hp, f->sport, fwd.addr, fwd.port);
}

SEC("tcx/ingress")
int lb_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	__u32 l4 = parse(skb, &f);
	if (!l4)
		return TCX_NEXT;
	struct nat *to = bpf_map_lookup_elem(&ct_fwd, &f);
	struct nat chosen = {};
	if (to) {
		chosen = *to;
		if (chosen.kind != NAT_DNAT)
			return hairpin_known(skb, l4, &f, &chosen);
		count(CNT_FWD);
	} else {
		struct svc_key sk = {.vip = f.daddr, .port = f.dport, .proto = f.proto};
		struct svc_val *svc = bpf_map_lookup_elem(&services, &sk);
		if (!svc)
			return TCX_NEXT;
		__u32 m = maglev_size(svc);
		if (!m)
			return TC_ACT_SHOT;
		struct backend *be = maglev_backend(svc, m, bpf_get_hash_recalc(skb));
		if (!be)
			return TC_ACT_SHOT;
		if (be->addr == f.saddr)
			return hairpin_new(skb, l4, &f, be);
		chosen.addr = be->addr;
		chosen.port = be->port;
		struct flow rev = {
			.saddr = be->addr, .daddr = f.saddr,
			.sport = be->port, .dport = f.sport, .proto = f.proto,
		};
		struct nat back = {.addr = f.daddr, .port = f.dport};
		bpf_map_update_elem(&ct_fwd, &f, &chosen, BPF_ANY);
		bpf_map_update_elem(&ct_rev, &rev, &back, BPF_ANY);
		count(CNT_NEW);
	}
	if (rewrite(skb, l4, f.proto, 16, f.daddr, chosen.addr, 2, f.dport, chosen.port))
		return TC_ACT_SHOT;
	return TCX_NEXT;
}

SEC("tcx/egress")
int lb_egress(struct __sk_buff *skb)
{
	struct flow f = {};
	__u32 l4 = parse(skb, &f);
	if (!l4)
		return TCX_NEXT;
	struct nat *vip = bpf_map_lookup_elem(&ct_rev, &f);
	if (!vip)
		return TCX_NEXT;
	struct nat v = *vip;
	if (rewrite(skb, l4, f.proto, 12, f.saddr, v.addr, 0, f.sport, v.port))
		return TC_ACT_SHOT;
	count(CNT_REV);
	return TCX_NEXT;
}

char __license[] SEC("license") = "Dual MIT/GPL";
