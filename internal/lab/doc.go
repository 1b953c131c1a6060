// Package lab builds a local container-network lab out of network
// namespaces: two "nodes" joined by a veth "wire", and "pods" on each node
// connected by one of several datapaths (plain routing with conntrack, a
// bridge, a VXLAN overlay, eBPF host routing, ...). Every namespace is named
// cnb-<runid>-<datapath>-<role>, lives in /run/netns, and has no link or route
// to the host's network namespace.
//
// See docs/lab.md for the topology, the addressing and each datapath's
// packet path.
package lab
