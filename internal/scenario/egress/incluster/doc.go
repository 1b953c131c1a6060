// Package incluster is the egress-filter scenario on a Kubernetes cluster.
// A point is the cluster's own policy layer (networkpolicy, cilium-policy,
// calico-networkset: the deny set as the mechanism's objects, created
// while the client pod probes the denied server; PreparePolicy), a
// raw mechanism of package filter loaded inside a client pod of its own on
// that pod's egress (PrepareRaw, whose pod runs RunInPod through
// `cnibench k8s agent egress-filter`), or the baseline (PrepareNone). Each
// deny is proven by the denied server ceasing to answer while the allowed
// one keeps answering, and its removal by the reverse; the two servers are
// the run's server pods or, with Options' Denied and Allowed, two
// `cnibench serve` outside the cluster.
package incluster
