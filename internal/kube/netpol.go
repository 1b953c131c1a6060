package kube

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// policy is the skeleton of run runID's network policy name in ns, which
// applies to the pods podSelector matches (all pods of ns if empty).
func policy(ns, runID, name string, podSelector map[string]string, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: runLabels(runID)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: maps.Clone(podSelector)},
			PolicyTypes: types,
		},
	}
}

// DenyAllIngress returns a network policy that denies all traffic into the
// pods podSelector matches (all pods of ns if empty), except what other
// policies allow.
func DenyAllIngress(ns, runID, name string, podSelector map[string]string) *networkingv1.NetworkPolicy {
	return policy(ns, runID, name, podSelector, networkingv1.PolicyTypeIngress)
}

// DenyAllEgress returns a network policy that denies all traffic out of
// the pods podSelector matches (all pods of ns if empty), DNS included,
// except what other policies allow.
func DenyAllEgress(ns, runID, name string, podSelector map[string]string) *networkingv1.NetworkPolicy {
	return policy(ns, runID, name, podSelector, networkingv1.PolicyTypeEgress)
}

// AllowIngressFrom returns a network policy that lets the pods of ns that
// from matches reach the pods that target matches on port, over TCP and
// UDP (all ports if port is 0).
func AllowIngressFrom(ns, runID, name string, target, from map[string]string, port int32) *networkingv1.NetworkPolicy {
	np := policy(ns, runID, name, target, networkingv1.PolicyTypeIngress)
	rule := networkingv1.NetworkPolicyIngressRule{
		From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(from)}}},
	}
	if port != 0 {
		for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{
				Protocol: new(proto),
				Port:     new(intstr.FromInt32(port)),
			})
		}
	}
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{rule}
	return np
}

// ApplyPolicy creates np, or replaces the spec and labels of the policy of
// that name if it exists.
func ApplyPolicy(ctx context.Context, cs kubernetes.Interface, np *networkingv1.NetworkPolicy) error {
	c := cs.NetworkingV1().NetworkPolicies(np.Namespace)
	id := np.Namespace + "/" + np.Name
	err := Call(ctx, "create networkpolicy "+id, func(ctx context.Context) error {
		_, err := c.Create(ctx, np, metav1.CreateOptions{})
		return err
	})
	if err == nil {
		Logger(ctx).Debug("network policy created", "policy", id)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// It exists (perhaps made by an earlier attempt of the create): the
	// update makes it np's whoever made it.
	var cur *networkingv1.NetworkPolicy
	if err := Call(ctx, "get networkpolicy "+id, func(ctx context.Context) (err error) {
		cur, err = c.Get(ctx, np.Name, metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	cur.Labels = np.Labels
	cur.Spec = np.Spec
	if err := Call(ctx, "update networkpolicy "+id, func(ctx context.Context) error {
		_, err := c.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return err
	}
	Logger(ctx).Debug("network policy updated", "policy", np.Namespace+"/"+np.Name)
	return nil
}

// DeletePolicy deletes network policy ns/name; one that does not exist is
// not an error.
func DeletePolicy(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	err := Call(ctx, "delete networkpolicy "+ns+"/"+name, func(ctx context.Context) error {
		return cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
