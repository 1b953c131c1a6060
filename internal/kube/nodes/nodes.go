package nodes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube"
)

// ControlPlaneLabel marks control-plane nodes, which SelectPairs uses only
// when there are not enough other nodes.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// Choice is the user's choice of the nodes the client and the server
// pods run on. Each is "" (automatic), a node name, or a label selector
// (anything containing '=', e.g. "node-role=bench").
type Choice struct {
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
	// zone is Zone(node).
	zone string
	// notes on a usable node: labels it lacks, assumed.
	notes []string
}

// usability says why n cannot run our pods under pl ("" if it can),
// whether the only reason is NoSchedule taints pl does not tolerate, and
// notes on what was assumed (missing os and arch labels).
func usability(n *corev1.Node, pl Placement) (why string, taintOnly bool, notes []string) {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return "not Ready", false, nil
	}
	if n.Spec.Unschedulable {
		return "cordoned", false, nil
	}
	switch os, ok := n.Labels[corev1.LabelOSStable]; {
	case !ok:
		notes = append(notes, fmt.Sprintf("node %s has no %s label: assumed linux", n.Name, corev1.LabelOSStable))
	case os != "linux":
		return "os " + os + ": the image is linux only", false, nil
	}
	switch arch, ok := n.Labels[corev1.LabelArchStable]; {
	case !ok:
		notes = append(notes, fmt.Sprintf("node %s has no %s label: assumed to be one of %s", n.Name, corev1.LabelArchStable, strings.Join(pl.arches(), ", ")))
	case !slices.Contains(pl.arches(), arch):
		return fmt.Sprintf("arch %s: the image has no such platform (it has %s)", arch, strings.Join(pl.arches(), ", ")), false, nil
	}
	if taints, noExecute := untolerated(n, pl.Tolerations); len(taints) > 0 {
		if !slices.ContainsFunc(taints, func(t string) bool { return !isConditionTaint(t) }) {
			// Not a dedicated pool: a passing state to wait out, not to tolerate.
			return "under node-condition taint " + strings.Join(taints, ",") +
				" (set by the node controller while the node is not ready, unreachable or under pressure; wait until it clears)", !noExecute, nil
		}
		return "tainted " + strings.Join(taints, ","), !noExecute, nil
	}
	return "", false, notes
}

// isControlPlane tells whether n carries ControlPlaneLabel.
func isControlPlane(n *corev1.Node) bool {
	_, ok := n.Labels[ControlPlaneLabel]
	return ok
}

// Pair is one (client, server) pair of nodes of SelectPairs.
type Pair struct {
	// Client and Server are the two nodes; they always differ.
	Client, Server *corev1.Node
	// ClientZone and ServerZone are their zones (Zone; "" unknown).
	ClientZone, ServerZone string
	// Reuse: the same (client, server) pair came earlier in the list:
	// there were fewer allowed pairs than asked for.
	Reuse bool
	// Notes say what was assumed about the two nodes (a missing zone, os
	// or arch label), one line each.
	Notes []string
}

// SelectPairs chooses n ordered (client, server) node pairs (--pairs N),
// client and server always different nodes.
//
// Usable nodes are Ready, not cordoned, labelled kubernetes.io/os=linux (or
// not labelled), of one of pl's arches (or not labelled), and every
// NoSchedule/NoExecute taint of theirs is tolerated by pl.Tolerations; they
// are ordered with the nodes that are not control planes first, then by
// name. Each of c.Client and c.Server allows every usable node (""), the
// usable nodes a label selector (anything containing '=') matches, or one
// node by name, which must be Ready, of the right os and arch, and without
// untolerated NoExecute taints (NoSchedule taints do not matter: our pods
// are pinned with spec.nodeName, bypassing the scheduler). pl.Zone then
// restricts the pairs to one zone (default), to different zones, or not.
//
// Order: every client candidate, in node order, serves in turn; in round
// d it gets the d-th of its allowed servers counted cyclically from its own
// place in the node order. With nodes A, B, C this gives A→B, B→C, C→A,
// then A→C, B→A, C→B: every node is client and server once per round
// before any pair repeats. When every allowed pair has been given, the list
// starts again from the first, and those pairs say Reuse (with two nodes:
// A→B, B→A, A→B (reuse), …). The first pair is the client and server of
// a one-pair run.
//
// Errors are one line: why each node is unusable, or, when only the zone
// policy stands in the way, the candidates by zone.
func SelectPairs(ctx context.Context, cs kubernetes.Interface, c Choice, pl Placement, n int) ([]Pair, error) {
	if n < 1 {
		return nil, fmt.Errorf("--pairs %d: must be at least 1", n)
	}
	pol := pl.zonePolicy()
	if _, err := ParsePlacement(string(pol)); err != nil {
		return nil, err
	}
	var list *corev1.NodeList
	if err := kube.Call(ctx, "list nodes", func(ctx context.Context) (err error) {
		list, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	states := make([]nodeState, len(list.Items))
	for i := range list.Items {
		nd := &list.Items[i]
		why, taintOnly, notes := usability(nd, pl)
		states[i] = nodeState{node: nd, why: why, taintOnly: taintOnly, zone: Zone(nd), notes: notes}
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
		return nil, err
	}
	candS, err := candidates(states, c.Server, "--server-node")
	if err != nil {
		return nil, err
	}
	all := orderPairs(states, candC, candS, pol)
	if len(all) == 0 {
		return nil, noPairError(states, c, candC, candS, pol)
	}
	byName := map[string]*nodeState{}
	for i := range states {
		byName[states[i].node.Name] = &states[i]
	}
	out := make([]Pair, n)
	for i := range out {
		p := all[i%len(all)]
		cst, sst := byName[p[0].Name], byName[p[1].Name]
		out[i] = Pair{Client: p[0], Server: p[1], ClientZone: cst.zone, ServerZone: sst.zone, Reuse: i >= len(all),
			Notes: pairNotes(cst, sst, pol)}
		kube.Logger(ctx).Debug("node pair selected", "pair", i, "client", p[0].Name, "server", p[1].Name,
			"client_zone", cst.zone, "server_zone", sst.zone, "reuse", out[i].Reuse)
	}
	return out, nil
}

// orderPairs lists every allowed (client, server) pair once, in
// SelectPairs' order.
func orderPairs(states []nodeState, candC, candS []*corev1.Node, pol ZonePolicy) [][2]*corev1.Node {
	pos := map[string]int{}
	zone := map[string]string{}
	for i, s := range states {
		pos[s.node.Name], zone[s.node.Name] = i, s.zone
	}
	k := len(states)
	servers := make([][]*corev1.Node, len(candC))
	rounds := 0
	for i, cn := range candC {
		for _, sn := range candS {
			if sn != cn && zoneAllows(pol, zone[cn.Name], zone[sn.Name]) {
				servers[i] = append(servers[i], sn)
			}
		}
		dist := func(sn *corev1.Node) int { return (pos[sn.Name] - pos[cn.Name] + k) % k }
		slices.SortStableFunc(servers[i], func(a, b *corev1.Node) int { return dist(a) - dist(b) })
		rounds = max(rounds, len(servers[i]))
	}
	var out [][2]*corev1.Node
	for d := range rounds {
		for i, cn := range candC {
			if d < len(servers[i]) {
				out = append(out, [2]*corev1.Node{cn, servers[i][d]})
			}
		}
	}
	return out
}

// pairNotes are the notes of a pair of nodes: what was assumed about each,
// and a zone policy that could not be checked.
func pairNotes(c, s *nodeState, pol ZonePolicy) []string {
	notes := slices.Concat(c.notes, s.notes)
	for _, st := range []*nodeState{c, s} {
		if st.zone == "" {
			notes = append(notes, fmt.Sprintf("node %s has no %s label: zone unknown", st.node.Name, corev1.LabelTopologyZone))
		}
	}
	if pol != ZoneAny && c.zone == "" && s.zone == "" {
		notes = append(notes, fmt.Sprintf("--placement %s: the nodes without a zone label count as one unknown zone; whether %s and %s share a zone is not known", pol, c.node.Name, s.node.Name))
	}
	return notes
}

// noPairError explains why no pair is allowed, in one line.
func noPairError(states []nodeState, c Choice, candC, candS []*corev1.Node, pol ZonePolicy) error {
	if len(candC) == 1 && len(candS) == 1 && candC[0] == candS[0] && c.Client != "" && c.Server != "" {
		return fmt.Errorf("--client-node %q and --server-node %q both select only node %s: client and server must run on different nodes", c.Client, c.Server, candC[0].Name)
	}
	if pol == ZoneAny || len(orderPairs(states, candC, candS, ZoneAny)) == 0 {
		return fmt.Errorf("need two different usable nodes for client and server: %s; choose them with --client-node/--server-node", summary(states))
	}
	zone := map[string]string{}
	for _, s := range states {
		zone[s.node.Name] = s.zone
	}
	var found string
	if c.Client == "" && c.Server == "" {
		found = "usable nodes by zone: " + byZone(candC, zone)
	} else {
		found = "client candidates by zone: " + byZone(candC, zone) + "; server candidates by zone: " + byZone(candS, zone)
	}
	if pol == ZoneCross {
		return fmt.Errorf("--placement cross-zone: no client and server node in different zones (%s); use --placement same-zone or any", found)
	}
	return fmt.Errorf("--placement %s: no client and server node share a zone (%s); use --placement any or cross-zone", pol, found)
}

// byZone lists nodes grouped by zone: "a: w1, w2; unknown: w3".
func byZone(nodes []*corev1.Node, zone map[string]string) string {
	groups := map[string][]string{}
	var zones []string
	for _, n := range nodes {
		z := zone[n.Name]
		if _, ok := groups[z]; !ok {
			zones = append(zones, z)
		}
		groups[z] = append(groups[z], n.Name)
	}
	slices.Sort(zones)
	parts := make([]string, len(zones))
	for i, z := range zones {
		parts[i] = zoneName(z) + ": " + strings.Join(groups[z], ", ")
	}
	return strings.Join(parts, "; ")
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
	for _, s := range states {
		if strings.HasPrefix(s.why, "tainted ") {
			// A dedicated, tainted node pool is used by tolerating it.
			out += "; to use tainted nodes pass --tolerations with their taints (e.g. --tolerations " + strings.TrimPrefix(strings.SplitN(s.why, ",", 2)[0], "tainted ") + ")"
			break
		}
	}
	return out
}

// InternalIP returns n's first InternalIP address, preferring IPv4;
// "" if it has none.
func InternalIP(n *corev1.Node) string {
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
