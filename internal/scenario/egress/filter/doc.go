// Package filter is what an egress filter is and the mechanisms that build
// one: a Mechanism (iptables, iptables-legacy, ipset, nftables, ebpf-lpm,
// ebpf-hash, the CNI-like composites calico-like, cilium-like and
// ipset-default, and none, the baseline) loads a Filter at a Target (a
// pod's node-side interface in its node's namespace, or a namespace's own
// egress) that drops packets to N deny CIDRs, and can be updated, read,
// detached and removed; Generate draws the deny sets. Every mechanism
// registers itself by name from an init function in its own file
// (Register), so the scenario, the pod agent and the benchmarks find them
// through Mechanisms and Lookup.
package filter
