// Package nscpu measures the CPU time the kernel spends receiving packets
// in each network namespace, so that a benchmark whose "nodes" are network
// namespaces sharing the same CPUs can report each node's share of the
// softirq work that no process is charged for.
//
// # What is measured
//
// Lab packets cross namespaces over veth (or netkit) pairs: the sender's
// transmit (veth_xmit) only hands the skb to the peer device's per-CPU
// backlog (netif_rx), or to its NAPI ring when the peer runs XDP or GRO,
// and raises the NET_RX softirq. Everything the receiving namespace does
// with the packet (tc/TCX ingress programs, netfilter and conntrack, IP
// forwarding or local delivery up to the socket, and the transmit into
// the next veth, which again only enqueues) then runs inside one
// __netif_receive_skb_core call per skb, in softirq context on whatever
// CPU (often inside the sending thread's local_bh_enable), and is charged
// to no process.
//
// BTF tracepoint programs (tp_btf, nscpu.c) cut each CPU's receive work
// into segments. The netif_receive_skb tracepoint, which
// __netif_receive_skb_core fires once per skb before any of that work,
// opens a segment charged to the namespace of the receiving device
// (skb->dev) and closes the segment open before it; napi_gro_receive_entry
// does the same for an skb entering GRO (veth in NAPI mode). napi_poll
// (after every NAPI poll: the backlog, a veth's ring, threaded and busy
// polling), netif_receive_skb_exit and netif_receive_skb_list_exit (after
// a receive called in process context, e.g. by tun) and softirq_entry and
// softirq_exit close the open segment. A segment thus spans one skb's
// receive in one namespace, up to the next skb or the end of the poll.
// Receives do not interleave on a CPU (softirq and BH-disabled code is
// not preempted), so segments do not overlap and no time is counted
// twice.
//
// Why tracepoints rather than fentry/fexit brackets around
// __netif_receive_skb, __netif_receive_skb_list_core and veth_poll (the
// non-inlined, BTF-visible functions that hold one skb's receive, one
// device's list receive and one veth NAPI poll, which was the first
// design): the 6.18 kernel this was built on (a Firecracker guest) refuses
// to load fentry and fexit programs (EPERM from BPF_PROG_LOAD with an
// empty verifier log; every BPF-trampoline program type is refused, while
// tp_btf and iterator programs load) and has no kprobes (CONFIG_KPROBES is
// unset). The tracepoints are also a stable interface, and one program per
// skb costs less than an entry and an exit program. README.md has the
// details.
//
// Nesting: a bridge port's receive hands the frame to the bridge device
// with netif_receive_skb() from inside its own receive (the "switched"
// datapath). The nested event closes the port's segment and opens the
// bridge's, both in the node's namespace; the packet is counted once (same
// skb, same namespace, another device). netif_receive_skb_exit then closes
// the bridge's segment, so what the port's receive does after the bridge
// consumed the frame (very little) is not charged. A packet that changes namespace
// without a new receive call (bpf_redirect_peer, ipvlan, macvlan: "another
// round" of the same call) is charged to the namespace it arrived in: a
// pod reached through redirect_peer is charged to its node, which is what
// a per-node report wants.
//
// softirq_entry/softirq_exit also time the NET_RX softirq as a whole, with
// no namespace: Totals reports it and the part outside every segment
// (backlog and NAPI bookkeeping, RPS, XDP before GRO in a veth poll).
//
// # What is not counted
//
//   - The sender's process-context path: sendmsg, the socket and IP output
//     of the sending namespace up to its first veth transmit (charged to
//     the sending process, which the benchmark measures through process
//     CPU time), and TCP work done in process context (the socket backlog
//     processed at release_sock, recvmsg copies).
//   - Hard interrupts are not excluded: one that arrives during a segment
//     is charged to it, as is vCPU steal, and so is part of the probes' own
//     cost (the rest of the opening program and the start of the next
//     one: roughly 100 to 200 ns per segment here).
//   - Softirqs other than NET_RX (timers: TCP retransmits and delayed
//     ACKs; NET_TX: qdisc dequeues, which veths without a qdisc do not
//     use), RCU callbacks, and the scheduling of ksoftirqd.
//   - In a veth NAPI poll, the XDP program and the ring handling before an
//     skb enters GRO; frames XDP drops or redirects are not packets; a GRO
//     super-packet counts as one.
//   - A segment left open by a path without a closing event is closed by
//     the next event on its CPU; one longer than 50 ms is dropped (counted
//     in Totals.Stale).
//   - On a PREEMPT_RT kernel, softirq work can be preempted and segments
//     of different threads would mix on a CPU: the figures are then only
//     approximate.
//   - Namespace inodes are reused after a namespace is destroyed; a
//     namespace created during a measurement can inherit a dead one's
//     cumulative usage (compare readings of namespaces that live
//     throughout, as Sub does).
//
// The package's README.md has the measured overhead.
package nscpu

import (
	"maps"
	"slices"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by every error that means "this machine
// cannot run the accountant" (no kernel BTF, BTF tracepoint programs or
// one of the tracepoints missing, not privileged).
var ErrNotSupported = internal.ErrNotSupported

// Usage is the receive processing charged to one network namespace.
type Usage struct {
	// SoftirqNs is the time, in nanoseconds summed over CPUs, spent
	// receiving packets on this namespace's devices. It runs in softirq
	// context (or, for netif_receive_skb() callers such as tun, with
	// bottom halves disabled).
	SoftirqNs uint64
	// Packets is the number of skbs received by this namespace's devices.
	Packets uint64
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{SoftirqNs: u.SoftirqNs + v.SoftirqNs, Packets: u.Packets + v.Packets}
}

// sub returns u - v, clamped at zero (a namespace inode reused after
// Start's reading would otherwise wrap around).
func (u Usage) sub(v Usage) Usage {
	d := Usage{}
	if u.SoftirqNs > v.SoftirqNs {
		d.SoftirqNs = u.SoftirqNs - v.SoftirqNs
	}
	if u.Packets > v.Packets {
		d.Packets = u.Packets - v.Packets
	}
	return d
}

// Sub returns the usage accrued between two readings of Read: after minus
// before for every namespace of after, leaving out namespaces that accrued
// nothing.
func Sub(after, before map[uint64]Usage) map[uint64]Usage {
	out := make(map[uint64]Usage, len(after))
	for ino, a := range after {
		if d := a.sub(before[ino]); d != (Usage{}) {
			out[ino] = d
		}
	}
	return out
}

// Sum adds the usage of the namespaces inodes (e.g. a node's namespace and
// its pods' namespaces) in u; an inode listed twice counts once.
func Sum(u map[uint64]Usage, inodes ...uint64) Usage {
	var s Usage
	seen := make(map[uint64]bool, len(inodes))
	for _, ino := range inodes {
		if !seen[ino] {
			seen[ino] = true
			s = s.Add(u[ino])
		}
	}
	return s
}

// Inodes returns the inodes of u, sorted.
func Inodes(u map[uint64]Usage) []uint64 {
	return slices.Sorted(maps.Keys(u))
}

// Totals are machine-wide figures, cumulative since Start and summed over
// CPUs.
type Totals struct {
	// NetRxNs is the time spent in the NET_RX softirq, NetRxRuns the
	// number of its runs.
	NetRxNs, NetRxRuns uint64
	// NetRxInsideNs is the part of NetRxNs inside per-namespace segments;
	// NetRxOutside is the rest, receive time no namespace is charged for.
	NetRxInsideNs uint64
	// Receives, GROs, Polls and Exits count the events: netif_receive_skb,
	// napi_gro_receive_entry, napi_poll, netif_receive_skb{,_list}_exit.
	Receives, GROs, Polls, Exits uint64
	// Segments counts the segments charged, Stale those dropped for
	// lasting longer than 50 ms, MapFull charges lost because more than
	// MaxNamespaces namespaces were charged.
	Segments, Stale, MapFull uint64
}

// NetRxOutside returns the NET_RX softirq time outside the per-namespace
// brackets.
func (t Totals) NetRxOutside() uint64 {
	if t.NetRxNs < t.NetRxInsideNs {
		return 0
	}
	return t.NetRxNs - t.NetRxInsideNs
}

// MaxNamespaces is the number of namespaces the usage map holds
// (max_entries of netns_usage in nscpu.c); charges to further ones are lost
// and counted in Totals.MapFull.
const MaxNamespaces = 4096
