package nodes

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// node returns a Ready node; opts change it.
func node(name string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0." + name[len(name)-1:]}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
func controlPlane(n *corev1.Node) {
	n.Labels[ControlPlaneLabel] = ""
}
func taint(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}
func label(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[k] = v }
}
