package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestClusterNameOr(t *testing.T) {
	ks := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: types.UID("3f2a9c1e-7b6d-4e0f-9a8b-1c2d3e4f5a6b")}}
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	tests := []struct {
		name, kube, host string
		objs             []runtime.Object
		want             string
	}{
		{name: "kubeconfig", kube: "kind-kind", host: "https://127.0.0.1:6443", want: "kind-kind"},
		{name: "host", host: "https://api.prod.example.com:6443", objs: []runtime.Object{ks}, want: "api.prod.example.com"},
		{name: "ip host", host: "192.168.1.10:6443", want: "192.168.1.10"},
		{name: "ipv6 host", host: "https://[fd00::1]:6443", want: "fd00::1"},
		{name: "in-cluster", host: "https://10.96.0.1:443", objs: []runtime.Object{ks}, want: "uid-3f2a9c1e"},
		{name: "no host", objs: []runtime.Object{ks}, want: "uid-3f2a9c1e"},
		{name: "nothing", want: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from := ClusterNameOr(context.Background(), fake.NewClientset(tt.objs...), tt.kube, tt.host)
			if got != tt.want || from == "" {
				t.Errorf("got %q (%s), want %q", got, from, tt.want)
			}
		})
	}
}
