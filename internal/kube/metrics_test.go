package kube

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
)

func podMetric(name string, usage ...[2]string) metricsv1beta1.PodMetrics {
	pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	for _, u := range usage {
		pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: "c", Usage: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(u[0]),
			corev1.ResourceMemory: resource.MustParse(u[1]),
		}})
	}
	return pm
}

func TestPodMetrics(t *testing.T) {
	mc := metricsfake.NewSimpleClientset()
	// The fake's tracker does not map PodMetrics to its resource, "pods".
	mc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "ns" {
			return true, &metricsv1beta1.PodMetricsList{}, nil
		}
		return true, &metricsv1beta1.PodMetricsList{Items: []metricsv1beta1.PodMetrics{
			podMetric("srv", [2]string{"250m", "10Mi"}, [2]string{"1500000n", "1Ki"}),
			podMetric("cli", [2]string{"2", "64Mi"}),
			podMetric("other", [2]string{"1", "1Mi"}),
		}}, nil
	})
	got, err := PodMetrics(context.Background(), mc, "ns", []string{"srv", "cli", "new"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Usage{
		"srv": {CPUNanoCores: 251.5e6, MemoryBytes: 10<<20 + 1024},
		"cli": {CPUNanoCores: 2e9, MemoryBytes: 64 << 20},
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
	all, err := PodMetrics(context.Background(), mc, "ns", nil)
	if err != nil || len(all) != 3 {
		t.Errorf("all pods: %v, %v", all, err)
	}

	mc.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request")
	})
	if _, err := PodMetrics(context.Background(), mc, "ns", nil); err == nil {
		t.Error("no error")
	}
}

func TestMetricsAvailable(t *testing.T) {
	disc := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	ctx := context.Background()
	if MetricsAvailable(ctx, disc) {
		t.Error("available without the API")
	}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: MetricsGroupVersion, APIResources: []metav1.APIResource{{Name: "nodes"}, {Name: "pods", Namespaced: true}}}}
	if !MetricsAvailable(ctx, disc) {
		t.Error("not available with the API")
	}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: MetricsGroupVersion, APIResources: []metav1.APIResource{{Name: "nodes"}}}}
	if MetricsAvailable(ctx, disc) {
		t.Error("available without pods")
	}
}
