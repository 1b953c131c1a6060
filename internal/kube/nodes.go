package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// ControlPlaneLabel marks control-plane nodes, which SelectNodes uses only
// when there are not enough other nodes.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// NodeChoice is the user's choice of the nodes the client and the server
// pods run on. Each is "" (automatic), a node name, or a label selector
// (anything containing '=', e.g. "node-role=bench").
type NodeChoice struct {
	Client, Server string
}

// nodeState is a node and why it cannot be used ("" if it can).
type nodeState struct {
	node *corev1.Node
	// why it is not usable; "" if usable.
	why string
	// taintOnly: unusable only because of NoSchedule taints, which pods
	// pinned with spec.nodeName ignore.
	taintOnly bool
}

// usability says why n cannot run our pods, which tolerate no taint ("" if
// it can), and whether the only reason is NoSchedule taints.
func usability(n *corev1.Node) (why string, taintOnly bool) {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return "not Ready", false
	}
	if n.Spec.Unschedulable {
		return "cordoned", false
	}
	var taints []string
	noExecute := false
	for _, t := range n.Spec.Taints {
		switch t.Effect {
		case corev1.TaintEffectNoExecute:
			noExecute = true
		case corev1.TaintEffectNoSchedule:
		default:
			continue
		}
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		taints = append(taints, s+":"+string(t.Effect))
	}
	if len(taints) > 0 {
		return "tainted " + strings.Join(taints, ","), !noExecute
	}
	return "", false
}

// isControlPlane tells whether n carries ControlPlaneLabel.
func isControlPlane(n *corev1.Node) bool {
	_, ok := n.Labels[ControlPlaneLabel]
	return ok
}

// SelectNodes chooses the client and the server node. Usable nodes are
// Ready, not cordoned and without NoSchedule/NoExecute taints (our pods
// tolerate none); they are ordered with the nodes that are not control
// planes first, then by name. An automatic choice takes the first usable
// node (client) and the next one (server); a selector takes the first
// usable node it matches; a node name takes that node, which must be Ready,
// not cordoned and without NoExecute taints (NoSchedule taints do not
// matter: our pods are pinned with spec.nodeName, bypassing the
// scheduler). Client and server always differ.
func SelectNodes(ctx context.Context, cs kubernetes.Interface, c NodeChoice) (client, server *corev1.Node, err error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	states := make([]nodeState, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		why, taintOnly := usability(n)
		states[i] = nodeState{node: n, why: why, taintOnly: taintOnly}
	}
	sort.SliceStable(states, func(i, j int) bool {
		a, b := states[i].node, states[j].node
		if ca, cb := isControlPlane(a), isControlPlane(b); ca != cb {
			return !ca
		}
		return a.Name < b.Name
	})
	candC, err := candidates(states, c.Client, "--client-node")
	if err != nil {
		return nil, nil, err
	}
	candS, err := candidates(states, c.Server, "--server-node")
	if err != nil {
		return nil, nil, err
	}
	for _, cn := range candC {
		for _, sn := range candS {
			if cn != sn {
				logger(ctx).Debug("nodes selected", "client", cn.Name, "server", sn.Name)
				return cn, sn, nil
			}
		}
	}
	if len(candC) == 1 && len(candS) == 1 && c.Client != "" && c.Server != "" {
		return nil, nil, fmt.Errorf("--client-node %q and --server-node %q both select only node %s: client and server must run on different nodes", c.Client, c.Server, candC[0].Name)
	}
	return nil, nil, fmt.Errorf("need two different usable nodes for client and server: %s; choose them with --client-node/--server-node", summary(states))
}

// candidates returns the nodes choice allows, in order; flag names the
// choice in errors.
func candidates(states []nodeState, choice, flag string) ([]*corev1.Node, error) {
	var out []*corev1.Node
	switch {
	case choice == "":
		for _, s := range states {
			if s.why == "" {
				out = append(out, s.node)
			}
		}
	case strings.Contains(choice, "="):
		sel, err := labels.Parse(choice)
		if err != nil {
			return nil, fmt.Errorf("%s %q: invalid label selector: %w", flag, choice, err)
		}
		matched := 0
		for _, s := range states {
			if !sel.Matches(labels.Set(s.node.Labels)) {
				continue
			}
			matched++
			if s.why == "" {
				out = append(out, s.node)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s %q: no usable node matches (%d nodes match; %s)", flag, choice, matched, summary(states))
		}
	default:
		for _, s := range states {
			if s.node.Name != choice {
				continue
			}
			if s.why != "" && !s.taintOnly {
				return nil, fmt.Errorf("%s %q: node is %s", flag, choice, s.why)
			}
			return []*corev1.Node{s.node}, nil
		}
		return nil, fmt.Errorf("%s %q: no such node (%s)", flag, choice, summary(states))
	}
	return out, nil
}

// summary is a one-line account of the usable and unusable nodes.
func summary(states []nodeState) string {
	usable := 0
	var why []string
	for _, s := range states {
		if s.why == "" {
			usable++
		} else {
			why = append(why, s.node.Name+" "+s.why)
		}
	}
	out := fmt.Sprintf("%d of %d nodes usable", usable, len(states))
	if len(why) > 0 {
		out += " (" + strings.Join(why, "; ") + ")"
	}
	return out
}

// NodeInternalIP returns n's first InternalIP address, preferring IPv4;
// "" if it has none.
func NodeInternalIP(n *corev1.Node) string {
	first := ""
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if !strings.Contains(a.Address, ":") {
			return a.Address
		}
		if first == "" {
			first = a.Address
		}
	}
	return first
}
