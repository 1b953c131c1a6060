package cluster

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/internal/kube/nodes"
)

// The identity of a run: what the results say about the cluster and the
// two nodes of each path, so that two runs are known to differ in one
// variable or not. The cluster's (Kubernetes version, kube-proxy's mode,
// the CNI's name, version and mode, the cluster's name) are in every run's
// labels (Deployment.Labels); each path's nodes' (name, zone, kernel, OS
// image, container runtime, instance type, architecture) in its path's.

// nodeFactLabels maps nodes.Facts' keys to the labels of a path: one
// label per fact for both nodes, since the two nodes of a cluster usually
// agree (when they do not, the label holds both: "client / server").
var nodeFactLabels = map[string]string{
	"kernel":            "node_kernel",
	"os_image":          "node_os_image",
	"container_runtime": "node_runtime",
	"instance_type":     "node_instance_type",
	"arch":              "node_arch",
}

// zoneLabel is a node's zone for the labels: "unknown" when it has no zone
// label (then every such node counts as one zone).
func zoneLabel(n *corev1.Node) string {
	if z := nodes.Zone(n); z != "" {
		return z
	}
	return "unknown"
}

// nodeLabels are the labels of a path from client node c to server node
// s: their names and zones, and their facts.
func nodeLabels(c, s *corev1.Node) map[string]string {
	l := map[string]string{
		"client_node": c.Name, "server_node": s.Name,
		"client_zone": zoneLabel(c), "server_zone": zoneLabel(s),
	}
	fc, fs := nodes.Facts(c), nodes.Facts(s)
	for k, label := range nodeFactLabels {
		a, b := fc[k], fs[k]
		switch {
		case a == "" && b == "":
		case a == b:
			l[label] = a
		default:
			l[label] = orUnknown(a) + " / " + orUnknown(b)
		}
	}
	return l
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// identify reads the cluster's facts and names the cluster (never
// empty), once per backend: every deployment of a run shares them.
func (b *Backend) identify(ctx context.Context, log *slog.Logger) {
	b.identOnce.Do(func() {
		facts, ev := cni.ClusterFacts(ctx, b.cs)
		b.facts, b.factsEvidence = facts, ev
		if !b.clusterSet {
			name, from := kube.ClusterNameOr(ctx, b.cs, b.kubeconfigCluster, b.apiHost)
			b.cluster = name
			b.factsEvidence = append(b.factsEvidence, "cluster "+name+": "+from)
		}
		log.Info("cluster", "name", b.cluster, "kubernetes", facts.K8sVersion, "kube-proxy", facts.KubeProxyMode)
	})
}
