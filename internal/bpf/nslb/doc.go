// Package nslb is the BPF side of cnibench's north-south L4 load-balancer
// lab (the lab's hidden "l4lb" datapath, seed 003: Cilium as a standalone
// L4 load balancer with Maglev, SNAT or DSR, direct routing or VXLAN, and
// a host firewall). Two objects:
//
//   - lb (lb.c), on the load-balancer node: a TCX ingress program on its
//     interface on the external segment picks a backend with Maglev
//     (internal/maglev) for each new flow to a service, records it in BPF
//     connection maps and sends the packet to the backend's worker; in snat
//     mode it also DNATs and SNATs, and a second program (on its VXLAN
//     device, with vxlan transport) or the first one (direct) translates
//     the backends' replies back.
//   - worker (worker.c), on each worker in dsr mode: DNAT from the VIP to
//     the local backend where the LB's packets arrive, and the reverse on
//     the backend's reply as it leaves the pod, so that the reply goes
//     straight to the client.
//
// TCX rather than XDP: the lab's "NICs" are veths, whose XDP runs on a frame
// the sender already built as an skb (XDP saves nothing there), XDP_TX on a
// veth needs NAPI on its peer, and the vxlan transport uses the kernel's
// VXLAN device through skb tunnel metadata (bpf_skb_set_tunnel_key), which
// XDP has not. Every mode runs the same program type at the same hook, so
// the modes differ by what the program does, not by where it runs.
//
// DSR by L2 direct return, not encapsulation: the LB keeps the VIP as the
// destination and only changes the next hop (bpf_redirect_neigh to the
// chosen worker's address, or the VXLAN tunnel's remote end). The kernel
// here has no ipip, and encapsulating in BPF would make dsr+direct carry
// an outer header that snat+direct does not, so the dsr-vs-snat comparison
// would also measure an encapsulation. The price: the worker must map the
// VIP to its local backend, so each worker holds at most one backend per
// service (WorkerConfig rejects more), and the LB and the workers must
// share an L2 segment (or the VXLAN tunnel).
//
// The generated lb_bpfel.{go,o} and worker_bpfel.{go,o} are committed so
// that building cnibench needs no clang.
package nslb
