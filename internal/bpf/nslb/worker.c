//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// worker: the worker side of the l4lb lab's direct server return, at TCX
// ingress (only attached in dsr mode).
//
//   - worker_ingress (where the LB's packets arrive: the worker's interface
//     on the external segment with direct transport, its VXLAN device with
//     vxlan): a TCP/UDP packet to a service in `services` (still addressed
//     to the VIP: the LB only chose this worker) is checked against the
//     firewall's allow list when settings.firewall is on (the worker is
//     where the client's address is still visible in dsr), then DNATed to
//     the service's backend on this worker; the reply flow is recorded in
//     `ct` with the VIP to restore. The node's IP stack then forwards it to
//     the pod.
//   - worker_from_pod (the node side of each backend pod's veth): a packet
//     whose flow is in `ct` is a backend's reply: its source becomes the
//     VIP again, and the node's stack routes it straight to the client,
//     past the LB.
// Everything else passes untouched (TCX_NEXT).

#include "nslb.h"

// Indexes of `counters`. Keep in sync with worker_linux.go.
enum counter_idx {
	CNT_DNAT = 0,    // a packet to the VIP DNATed to the local backend
	CNT_REVNAT = 1,  // a backend's reply given the VIP back as its source
	CNT_FW_DROP = 2, // a service packet from a source the firewall refuses: dropped
	CNT_MAX = 3,
};

// services value: the service's backend on this worker.
struct local_be {
	__u32 addr; // network order
	__u16 port; // network order
	__u16 pad;
};

// ct value: the VIP a backend's reply is given back.
struct vip_nat {
	__u32 vip;
	__u16 vport;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct svc_key);
	__type(value, struct local_be);
	__uint(max_entries, 1); // set by the loader
} services SEC(".maps");

FLOW_MAP(ct, struct vip_nat);

#include "counters.h"

SEC("tcx/ingress")
int worker_ingress(struct __sk_buff *skb)
{
	struct flow f = {};
	__u32 l4 = parse(skb, &f);
	if (!l4)
		return TCX_NEXT;
	struct svc_key sk = {.vip = f.daddr, .port = f.dport, .proto = f.proto};
	struct local_be *be = bpf_map_lookup_elem(&services, &sk);
	if (!be)
		return TCX_NEXT;
	struct settings *st = get_settings();
	if (!st)
		return TC_ACT_SHOT;
	if (st->firewall && !allowed(f.saddr)) {
		count(CNT_FW_DROP);
		return TC_ACT_SHOT;
	}
	struct local_be to = *be;
	struct flow rev = {.saddr = to.addr, .daddr = f.saddr, .sport = to.port, .dport = f.sport, .proto = f.proto};
	struct vip_nat *have = bpf_map_lookup_elem(&ct, &rev);
	// Written on a miss only: the per-packet cost of a known flow is one
	// lookup, as on the LB.
	if (!have || have->vip != f.daddr || have->vport != f.dport) {
		struct vip_nat v = {.vip = f.daddr, .vport = f.dport};
		bpf_map_update_elem(&ct, &rev, &v, BPF_ANY);
	}
	if (rewrite(skb, l4, f.proto, 16, f.daddr, to.addr, 2, f.dport, to.port))
		return TC_ACT_SHOT;
	count(CNT_DNAT);
	return TCX_NEXT;
}

SEC("tcx/ingress")
int worker_from_pod(struct __sk_buff *skb)
{
	struct flow f = {};
	__u32 l4 = parse(skb, &f);
	if (!l4)
		return TCX_NEXT;
	struct vip_nat *v = bpf_map_lookup_elem(&ct, &f);
	if (!v)
		return TCX_NEXT;
	struct vip_nat to = *v;
	if (rewrite(skb, l4, f.proto, 12, f.saddr, to.vip, 0, f.sport, to.vport))
		return TC_ACT_SHOT;
	count(CNT_REVNAT);
	return TCX_NEXT;
}

char __license[] SEC("license") = "Dual MIT/GPL";
