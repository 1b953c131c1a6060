// Package datapaths holds the lab's standard datapaths, each a way of
// connecting the pods of the standard two-node topology (lab.BuildNodes,
// lab.StandardPods): the baseline (node to node, no pods) and its
// conntrack variants, veth-routing (Calico style, with -notrack and -cost
// variants), bridge and vxlan (flannel style), the eBPF host-routing
// family and netkit.
//
// Each registers itself with the lab (lab.Register, lab.RegisterOptIn)
// from its init, so a program or test that builds labs imports this
// package, blank where it names none of its types:
//
//	import _ "github.com/cnibench/cnibench/internal/lab/datapaths"
//
// Linux only; elsewhere the package is empty and registers nothing.
package datapaths
