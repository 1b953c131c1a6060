// Package lbnet is the l4lb scenario's own lab topology: the hidden lab
// datapath "l4lb" (seed 003), a north-south L4 load balancer in front of
// two workers, with the clients outside the cluster. Every namespace is on
// one external L2 segment (a bridge in the "switch" namespace), so that in
// dsr the workers can answer the clients without the LB. See
// internal/bpf/nslb/README.md for the modes and packet walks.
//
// The datapath registers itself with lab.RegisterHidden when the package
// is linked (the l4lb scenario imports it): Setup builds the namespaces,
// the segment and the backend pods; LB (Of, Datapath.LB) switches the
// load balancer between modes at run time (Configure: snat, dsr or
// kube-proxy; direct or VXLAN; firewall off or on) and observes it
// (Counters, RefusalProbe, SYNFlood, SetCPUSplit, ConntrackVIPEntries).
package lbnet
