// Package cni identifies what carries a cluster's pod and service traffic,
// from its API alone: the CNI (Identify: its pods' names, labels and
// images matched against the known CNIs, or the node's CNI configuration;
// ListSystemPods, PodsBySelector), the CNI's mode as its own configuration
// says (DetectMode: mode.go, and a file per CNI whose configuration it
// reads: flannel, cilium, calico, canal), and beside it the Kubernetes
// version and kube-proxy's mode or its replacement (ClusterFacts,
// kubeproxy.go). Nothing here fails a run: what cannot be read is said in
// the evidence. ConfigMaps names what it reads, for internal/kube/rbac.
package cni
