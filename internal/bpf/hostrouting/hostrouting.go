// Package hostrouting is cnibench's model of Cilium's "BPF host routing":
// a tc program on the node's pod-facing veths and on its uplink that looks
// the destination up in the node's FIB (bpf_fib_lookup) and then hands the
// packet straight to the destination pod (bpf_redirect_peer, or with
// Options.RedirectHost bpf_redirect to the egress of the pod's host-side
// veth, as Calico's eBPF dataplane does) or out of the uplink
// (bpf_redirect_neigh), bypassing the node's IP forwarding path and
// netfilter. Everything the program cannot handle is passed to the stack
// unchanged.
//
// One Program is loaded per node network namespace. The BPF source is
// hostrouting.c; the generated hostrouting_bpfel.{go,o} are committed so that
// building cnibench needs no clang (see README.md to regenerate).
package hostrouting

import "github.com/cnibench/cnibench/internal"

// ErrNotSupported is wrapped by every error that means "this machine cannot
// run BPF host routing" (wrong OS, no TCX/clsact, a helper missing, BPF
// loading refused, not privileged). Check it with errors.Is.
var ErrNotSupported = internal.ErrNotSupported

// Counters are the program's per-action packet counts, summed over CPUs.
type Counters struct {
	// RedirectPeer counts packets handed to a local pod with
	// bpf_redirect_peer (node stack and netfilter bypassed).
	RedirectPeer uint64
	// RedirectHost counts packets sent to a local pod with bpf_redirect to
	// the egress of its host-side veth (Options.RedirectHost): node stack
	// and netfilter bypassed, but the veth transmit and the pod's per-CPU
	// backlog kept.
	RedirectHost uint64
	// RedirectNeigh counts packets transmitted with bpf_redirect_neigh:
	// to the uplink, or to a local pod whose neighbour entry is not
	// resolved yet.
	RedirectNeigh uint64
	// Pass is the total of packets passed to the node's stack (TC_ACT_OK):
	// the sum of the Pass* fields below.
	Pass uint64
	// PassNotIPv4 counts non-IPv4 (ARP, IPv6) or malformed packets.
	PassNotIPv4 uint64
	// PassFIB counts packets the FIB does not forward: local destinations,
	// no route, blackhole/unreachable/prohibit, forwarding disabled,
	// fragmentation needed.
	PassFIB uint64
	// PassTTL counts packets whose TTL would expire at this hop (the stack
	// sends the ICMP time-exceeded error).
	PassTTL uint64
	// PassEgress counts packets whose egress device is neither a registered
	// pod veth nor a registered uplink, or is the ingress device itself.
	PassEgress uint64
	// Drop counts packets a redirect helper refused (TC_ACT_SHOT).
	Drop uint64
	// CTNew counts connection-tracking misses that created an entry,
	// CTEstablished hits in the original direction, CTReply hits in the
	// reply direction (all 0 for a Bare program).
	CTNew, CTEstablished, CTReply uint64
	// PolicyDenied counts packets the policy map dropped (TC_ACT_SHOT).
	PolicyDenied uint64
}

// Options configure Load.
type Options struct {
	// Bare loads the redirect alone: no connection-tracking map lookup and
	// update, no policy map lookup (an upper bound, not a model of Cilium).
	Bare bool
	// RedirectHost delivers packets for a local pod with bpf_redirect to
	// the egress of the pod's host-side veth (veth_xmit, then the pod's
	// per-CPU backlog), as Calico's eBPF dataplane does, instead of
	// bpf_redirect_peer into the pod's eth0. The uplink path
	// (bpf_redirect_neigh) is the same either way.
	RedirectHost bool
}

// Total is the number of packets the program has seen.
func (c Counters) Total() uint64 {
	return c.RedirectPeer + c.RedirectHost + c.RedirectNeigh + c.Pass + c.Drop + c.PolicyDenied
}
