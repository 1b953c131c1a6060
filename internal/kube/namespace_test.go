package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/internal/kube/preflight"
)

func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mine"}})
	created, err := EnsureNamespace(ctx, cs, "cnibench-r1", "r1")
	if err != nil || !created {
		t.Fatalf("new namespace: created %v, err %v", created, err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "cnibench-r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[ManagedByKey] != ManagedBy || ns.Labels[RunKey] != "r1" || ns.Labels[preflight.PodSecurityEnforceKey] != "privileged" {
		t.Errorf("labels %v", ns.Labels)
	}
	if created, err := EnsureNamespace(ctx, cs, "cnibench-r1", "r2"); err != nil || created {
		t.Errorf("again: created %v, err %v", created, err)
	}
	created, err = EnsureNamespace(ctx, cs, "mine", "r1")
	if err != nil || created {
		t.Errorf("existing namespace: created %v, err %v", created, err)
	}
	ns, _ = cs.CoreV1().Namespaces().Get(ctx, "mine", metav1.GetOptions{})
	if len(ns.Labels) != 0 {
		t.Errorf("existing namespace relabelled: %v", ns.Labels)
	}
}

func TestCreateTokenSecret(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	name, err := CreateTokenSecret(ctx, cs, "ns", "r1", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cs.CoreV1().Secrets("ns").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data[TokenKey]) != "s3cret" || s.Labels[RunKey] != "r1" || s.Labels[ManagedByKey] != ManagedBy {
		t.Errorf("secret %+v", s)
	}
	if _, err := CreateTokenSecret(ctx, cs, "ns", "r1", "again"); err == nil {
		t.Error("second secret of the run: no error")
	}
}
