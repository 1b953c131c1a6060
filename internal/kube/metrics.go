package kube

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// MetricsGroupVersion is the API that serves pod metrics (metrics-server).
const MetricsGroupVersion = "metrics.k8s.io/v1beta1"

// Usage is a pod's resource usage, summed over its containers, as the
// metrics API reports it (an average over its last scrape window).
type Usage struct {
	// CPUNanoCores is CPU usage in cores × 1e9.
	CPUNanoCores float64
	// MemoryBytes is the working-set memory.
	MemoryBytes int64
}

// PodMetrics returns the usage of the pods of namespace ns named in names
// (all its pods if names is empty), by pod name. A pod the metrics API
// has no sample of yet (a new pod) is missing from the map.
func PodMetrics(ctx context.Context, mc metricsclient.Interface, ns string, names []string) (map[string]Usage, error) {
	var list *metricsv1beta1.PodMetricsList
	err := Call(ctx, "get pod metrics in namespace "+ns, func(ctx context.Context) (err error) {
		list, err = mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]Usage{}
	for _, pm := range list.Items {
		if len(names) > 0 && !slices.Contains(names, pm.Name) {
			continue
		}
		var u Usage
		for _, c := range pm.Containers {
			if q, ok := c.Usage[corev1.ResourceCPU]; ok {
				u.CPUNanoCores += float64(q.ScaledValue(resource.Nano))
			}
			if q, ok := c.Usage[corev1.ResourceMemory]; ok {
				u.MemoryBytes += q.Value()
			}
		}
		out[pm.Name] = u
	}
	return out, nil
}

// MetricsAvailable tells whether the cluster serves pod metrics
// (MetricsGroupVersion, usually from metrics-server): registered, and
// answering discovery. It asks once, within the RetryPolicy's CallTimeout:
// an aggregated API that is down answers 503 for as long as it is down.
func MetricsAvailable(ctx context.Context, disc discovery.DiscoveryInterface) bool {
	var res *metav1.APIResourceList
	_, err := Once(ctx, "discover "+MetricsGroupVersion, func(ctx context.Context) (err error) {
		res, err = discovery.ToDiscoveryInterfaceWithContext(disc).ServerResourcesForGroupVersionWithContext(ctx, MetricsGroupVersion)
		return err
	})
	if err != nil {
		Logger(ctx).Debug("metrics API not available", "err", err)
		return false
	}
	for _, r := range res.APIResources {
		if r.Name == "pods" {
			return true
		}
	}
	return false
}
