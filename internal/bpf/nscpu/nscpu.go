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
// with the packet — tc/TCX ingress programs, netfilter, conntrack, IP
// forwarding or local delivery up to the socket, and the transmit into the
// next veth, which again only enqueues — then runs inside one call per skb
// (or per list of skbs) on whatever CPU the softirq runs on, often inside
// the sending thread's local_bh_enable(), and is charged to no process.
//
// fentry/fexit programs bracket those calls (nscpu.c):
//
//   - __netif_receive_skb: one skb, from process_backlog (netif_rx: veth
//     without NAPI, netkit, loopback) or netif_receive_skb();
//   - __netif_receive_skb_list_core: a list of skbs of one device, from GRO
//     and netif_receive_skb_list() (veth in NAPI mode);
//   - veth_poll: a veth NAPI poll (XDP, GRO, the ptr_ring), around the list
//     receive.
//
// These three are not inlined on the kernels cnibench runs on (they are in
// /proc/kallsyms and in the kernel's BTF), and none of them calls another
// in the normal path, so each packet's processing is timed once. Functions
// that were rejected: process_backlog and net_rx_action handle the skbs of
// many devices (and namespaces) per call; __netif_receive_skb_one_core is
// only ever called by __netif_receive_skb; __netif_receive_skb_core is
// compiled as a .constprop clone (no attachable symbol) and does not cover
// the protocol delivery (ip_rcv) that follows it;
// netif_receive_skb_list_internal also holds skbs that RPS sends to other
// CPUs.
//
// The namespace charged is that of the receiving device (skb->dev,
// napi->dev) at entry, identified by its inode (what NetnsInode returns
// for a handle on it, and `ls -L -i /proc/PID/ns/net` shows).
//
// Brackets can nest: a bridge port's receive hands the frame to the bridge
// device with netif_receive_skb() (the "switched" datapath), and a list
// receive runs inside veth_poll. A per-CPU stack in the BPF program
// charges each bracket its own time (elapsed minus the nested brackets'),
// so the total equals the outermost brackets' time and nothing is counted
// twice; a nested receive in another namespace (rare: the drivers that
// move an skb to another namespace do it with another round of the same
// call) is charged to that namespace. Packets are counted per skb by the
// per-skb brackets, once per namespace (a bridge port and its bridge count
// one packet).
//
// The NET_RX softirq handler (net_rx_action) is timed too, per CPU, with no
// namespace: Totals reports it and the part of it spent outside the
// brackets (backlog and NAPI bookkeeping, RPS, budget handling).
//
// # What is not counted
//
//   - The sender's process-context path: sendmsg, the socket and IP output
//     of the sending namespace up to its first veth transmit (charged to the
//     sending process, which the benchmark measures through process CPU
//     time), and TCP work done in process context (the socket backlog
//     processed at release_sock, recvmsg copies).
//   - Hard interrupts, softirqs other than NET_RX (timers: TCP retransmit
//     and delayed ACK; NET_TX: qdisc dequeues, which veths without a qdisc
//     do not use), RCU callbacks, and time spent scheduling ksoftirqd.
//   - Frames that XDP drops or redirects in veth_poll are timed but not
//     counted as packets; a GRO super-packet counts as one.
//   - The probes' own cost is partly inside the brackets (the part of the
//     entry program after its timestamp and of the exit program before it).
//
// The package's README.md has the measured overhead.
package nscpu

import (
	"errors"
	"maps"
	"slices"
)

// ErrNotSupported is wrapped by every error that means "this machine
// cannot run the accountant" (no BTF, no fentry/fexit, missing kernel
// function, not privileged).
var ErrNotSupported = errors.New("not supported")

// Usage is the receive processing charged to one network namespace.
type Usage struct {
	// SoftirqNs is the time, in nanoseconds summed over CPUs, spent in
	// the bracketed receive functions for this namespace's devices. It runs
	// in softirq context (or, for netif_receive_skb() callers such as tun,
	// with bottom halves disabled).
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
	// NetRxNs is the time spent in the NET_RX softirq handler
	// (net_rx_action), NetRxRuns the number of its runs (0 if it could not
	// be attached).
	NetRxNs, NetRxRuns uint64
	// NetRxInsideNs is the part of NetRxNs inside the per-namespace
	// brackets; NetRxNs - NetRxInsideNs is softirq receive time that no
	// namespace is charged for.
	NetRxInsideNs uint64
	// SkbCalls, ListCalls and PollCalls count the brackets charged:
	// __netif_receive_skb, __netif_receive_skb_list_core, veth_poll.
	SkbCalls, ListCalls, PollCalls uint64
	// Unmatched counts exits whose entry was not seen and entries whose
	// exit was not seen (normally only around Start, for calls in flight);
	// TooDeep brackets nested deeper than the program's stack (their time
	// goes to the enclosing one); MapFull charges lost because the usage
	// map was full (more than MaxNamespaces namespaces).
	Unmatched, TooDeep, MapFull uint64
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

// Hook names: the kernel functions bracketed.
const (
	hookSkb   = "__netif_receive_skb"
	hookList  = "__netif_receive_skb_list_core"
	hookPoll  = "veth_poll"
	hookNetRx = "net_rx_action"
)
