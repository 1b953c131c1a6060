package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestPolicies(t *testing.T) {
	srv := map[string]string{RoleKey: "server"}
	cli := map[string]string{RoleKey: "client"}
	tests := []struct {
		name    string
		np      *networkingv1.NetworkPolicy
		target  map[string]string
		types   []networkingv1.PolicyType
		ingress int // rules
		egress  int
		from    map[string]string
		ports   []corev1.Protocol
		portNum int32
		denyAll bool
	}{
		{name: "deny ingress", np: DenyAllIngress("ns", "r1", "deny-in", srv), target: srv, types: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
		{name: "deny ingress all pods", np: DenyAllIngress("ns", "r1", "deny-in", nil), types: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
		{name: "deny egress", np: DenyAllEgress("ns", "r1", "deny-out", cli), target: cli, types: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}},
		{name: "allow port", np: AllowIngressFrom("ns", "r1", "allow", srv, cli, 5201), target: srv, types: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			ingress: 1, from: cli, ports: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}, portNum: 5201},
		{name: "allow all ports", np: AllowIngressFrom("ns", "r1", "allow", srv, cli, 0), target: srv, types: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			ingress: 1, from: cli},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := tt.np
			if np.Namespace != "ns" || np.Labels[RunKey] != "r1" || np.Labels[ManagedByKey] != ManagedBy || np.APIVersion != "networking.k8s.io/v1" || np.Kind != "NetworkPolicy" {
				t.Errorf("meta %+v", np.ObjectMeta)
			}
			if !equalMaps(np.Spec.PodSelector.MatchLabels, tt.target) || np.Spec.PodSelector.MatchExpressions != nil {
				t.Errorf("pod selector %+v, want %v", np.Spec.PodSelector, tt.target)
			}
			if len(np.Spec.PolicyTypes) != len(tt.types) || np.Spec.PolicyTypes[0] != tt.types[0] {
				t.Errorf("policy types %v, want %v", np.Spec.PolicyTypes, tt.types)
			}
			if len(np.Spec.Ingress) != tt.ingress || len(np.Spec.Egress) != tt.egress {
				t.Fatalf("rules: %d ingress, %d egress", len(np.Spec.Ingress), len(np.Spec.Egress))
			}
			if tt.ingress == 0 {
				return
			}
			r := np.Spec.Ingress[0]
			if len(r.From) != 1 || !equalMaps(r.From[0].PodSelector.MatchLabels, tt.from) || r.From[0].NamespaceSelector != nil || r.From[0].IPBlock != nil {
				t.Errorf("from %+v", r.From)
			}
			if len(r.Ports) != len(tt.ports) {
				t.Fatalf("ports %+v", r.Ports)
			}
			for i, p := range r.Ports {
				if *p.Protocol != tt.ports[i] || p.Port.IntVal != tt.portNum || p.EndPort != nil {
					t.Errorf("port %d: %+v", i, p)
				}
			}
		})
	}
	// The builders copy the selectors.
	np := DenyAllIngress("ns", "r1", "x", srv)
	np.Spec.PodSelector.MatchLabels["y"] = "z"
	if len(srv) != 1 {
		t.Error("selector shared with the caller")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestApplyDeletePolicy(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	if err := ApplyPolicy(ctx, cs, DenyAllIngress("ns", "r1", "p", nil)); err != nil {
		t.Fatal(err)
	}
	if err := ApplyPolicy(ctx, cs, DenyAllEgress("ns", "r1", "p", nil)); err != nil {
		t.Fatal(err)
	}
	got, err := cs.NetworkingV1().NetworkPolicies("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Errorf("not replaced: %+v", got.Spec)
	}
	if err := DeletePolicy(ctx, cs, "ns", "p"); err != nil {
		t.Fatal(err)
	}
	if err := DeletePolicy(ctx, cs, "ns", "p"); err != nil {
		t.Errorf("deleting a missing policy: %v", err)
	}
}
