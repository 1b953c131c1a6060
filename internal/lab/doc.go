// Package lab builds a local container-network lab out of network
// namespaces: two "nodes" joined by a veth "wire", and "pods" on each node
// connected by one of several datapaths (plain routing with conntrack, a
// bridge, a VXLAN overlay, eBPF host routing, ...). Every namespace is named
// cnb-<runid>-<datapath>-<role>, lives in /run/netns, and has no link or route
// to the host's network namespace.
//
// This package is the ground the datapaths stand on: namespaces, the lab,
// the Datapath interface and its registry, the standard two-node topology
// (BuildNodes, StandardPods, PodEndpoints), wiring and nftables helpers,
// the path evidence and the lab backend. The standard datapaths are in
// internal/lab/datapaths, which registers them when it is linked; a
// scenario's own topology lives with the scenario (RegisterHidden).
//
// See docs/lab.md for the topology, the addressing and each datapath's
// packet path.
package lab
