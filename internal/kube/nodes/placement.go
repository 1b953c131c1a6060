package nodes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// ZonePolicy says how the client and the server node of a pair relate to
// the cluster's zones.
type ZonePolicy string

// The zone policies (--placement).
const (
	// ZoneSame puts client and server in one zone (the default, as
	// k8s-netperf prefers): cross-node then means cross-node, not
	// cross-zone.
	ZoneSame ZonePolicy = "same-zone"
	// ZoneCross puts them in different zones.
	ZoneCross ZonePolicy = "cross-zone"
	// ZoneAny ignores zones.
	ZoneAny ZonePolicy = "any"
)

// DefaultArches are the node architectures cnibench's image is built for.
var DefaultArches = []string{"amd64", "arm64"}

// Placement constrains the nodes SelectPairs chooses. The
// zero value is the default: same zone, linux nodes of DefaultArches, no
// taint tolerated.
type Placement struct {
	// Zone is the zone policy; "" is ZoneSame. A node's zone is its
	// topology.kubernetes.io/zone label, else its legacy
	// failure-domain.beta.kubernetes.io/zone label, else "": all the
	// nodes without a zone label count as one unknown zone, and the
	// pairs that involve it say so in their Notes.
	Zone ZonePolicy
	// Arches are the kubernetes.io/arch values the image runs on; nil is
	// DefaultArches. A node without the label is accepted, with a note.
	Arches []string
	// Tolerations make a node whose NoSchedule and NoExecute taints they
	// all tolerate usable. The pods must carry them too (PodSpec's
	// Tolerations): the kubelet evicts a pod that does not tolerate a
	// NoExecute taint, spec.nodeName or not.
	Tolerations []corev1.Toleration
}

// zonePolicy is p's zone policy with the default applied.
func (p Placement) zonePolicy() ZonePolicy {
	if p.Zone == "" {
		return ZoneSame
	}
	return p.Zone
}

// arches is p's architectures with the default applied.
func (p Placement) arches() []string {
	if len(p.Arches) == 0 {
		return DefaultArches
	}
	return p.Arches
}

// ParsePlacement parses the --placement flag: same-zone (also ""), cross-zone
// or any.
func ParsePlacement(s string) (ZonePolicy, error) {
	switch z := ZonePolicy(strings.TrimSpace(s)); z {
	case "":
		return ZoneSame, nil
	case ZoneSame, ZoneCross, ZoneAny:
		return z, nil
	}
	return "", fmt.Errorf("--placement %q: unknown policy; use same-zone, cross-zone or any", s)
}

// tolerationSyntax is the help ParseTolerations' errors end with.
const tolerationSyntax = "the syntax is key[=value][:NoSchedule|PreferNoSchedule|NoExecute], comma-separated, e.g. dedicated=bench:NoSchedule,gpu"

// ParseTolerations parses the --tolerations flag, in kubectl's taint
// syntax: a comma-separated list of key=value:Effect (tolerates that taint),
// key:Effect (the key with any value, that effect), key=value (that taint
// with any effect) or key (the key with any value and any effect). Effect is
// NoSchedule, PreferNoSchedule or NoExecute. "" gives none. NoExecute
// tolerations have no tolerationSeconds: the pods stay.
func ParseTolerations(s string) ([]corev1.Toleration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []corev1.Toleration
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("--tolerations %q: empty item; %s", s, tolerationSyntax)
		}
		t := corev1.Toleration{Operator: corev1.TolerationOpExists}
		kv, effect, hasEffect := strings.Cut(item, ":")
		if hasEffect {
			switch e := corev1.TaintEffect(effect); e {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
				t.Effect = e
			default:
				return nil, fmt.Errorf("--tolerations %q: effect %q of %q is not NoSchedule, PreferNoSchedule or NoExecute; %s", s, effect, item, tolerationSyntax)
			}
		}
		key, value, hasValue := strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("--tolerations %q: key %q of %q: %s; %s", s, key, item, errs[0], tolerationSyntax)
		}
		t.Key = key
		if hasValue {
			if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
				return nil, fmt.Errorf("--tolerations %q: value %q of %q: %s; %s", s, value, item, errs[0], tolerationSyntax)
			}
			t.Operator, t.Value = corev1.TolerationOpEqual, value
		}
		out = append(out, t)
	}
	return out, nil
}

// untolerated returns n's NoSchedule and NoExecute taints no toleration of
// ts tolerates, written key[=value]:Effect, and whether one of them is
// NoExecute.
func untolerated(n *corev1.Node, ts []corev1.Toleration) (taints []string, noExecute bool) {
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		// Only Equal and Exists come from ParseTolerations; Lt/Gt
		// (disabled here) would need the feature gate's decision.
		if slices.ContainsFunc(ts, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Logger{}, t, false) }) {
			continue
		}
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		taints = append(taints, s+":"+string(t.Effect))
		noExecute = noExecute || t.Effect == corev1.TaintEffectNoExecute
	}
	return taints, noExecute
}

// conditionTaints are the taints the node lifecycle controller and the
// kubelet set from a node's conditions (the well-known
// node.kubernetes.io/… taints other than out-of-service).
var conditionTaints = []string{
	corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
	corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodeNetworkUnavailable,
	corev1.TaintNodePIDPressure,
}

// isConditionTaint tells whether t, as untolerated formats it
// (key[=value]:Effect), is one of conditionTaints.
func isConditionTaint(t string) bool {
	key, _, _ := strings.Cut(t, ":")
	key, _, _ = strings.Cut(key, "=")
	return slices.Contains(conditionTaints, key)
}

// Zone returns n's zone: its topology.kubernetes.io/zone label, else
// its legacy failure-domain.beta.kubernetes.io/zone label, else "".
func Zone(n *corev1.Node) string {
	if z := n.Labels[corev1.LabelTopologyZone]; z != "" {
		return z
	}
	return n.Labels[corev1.LabelFailureDomainBetaZone]
}

// zoneName is z for messages ("unknown" for "").
func zoneName(z string) string {
	if z == "" {
		return "unknown"
	}
	return z
}

// zoneAllows tells whether pol allows a client in zone a with a server in
// zone b.
func zoneAllows(pol ZonePolicy, a, b string) bool {
	switch pol {
	case ZoneCross:
		return a != b
	case ZoneAny:
		return true
	default:
		return a == b
	}
}

// Facts describes n for the results' identity: kernel, os_image,
// container_runtime, kubelet, arch, instance_type, zone and region, from
// its status.nodeInfo and its well-known labels (the legacy beta labels
// where the stable ones are missing). Empty values are omitted.
func Facts(n *corev1.Node) map[string]string {
	info := n.Status.NodeInfo
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := n.Labels[k]; v != "" {
				return v
			}
		}
		return ""
	}
	arch := info.Architecture
	if arch == "" {
		arch = first(corev1.LabelArchStable)
	}
	facts := map[string]string{
		"kernel":            info.KernelVersion,
		"os_image":          info.OSImage,
		"container_runtime": info.ContainerRuntimeVersion,
		"kubelet":           info.KubeletVersion,
		"arch":              arch,
		"instance_type":     first(corev1.LabelInstanceTypeStable, corev1.LabelInstanceType),
		"zone":              Zone(n),
		"region":            first(corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion),
	}
	for k, v := range facts {
		if v == "" {
			delete(facts, k)
		}
	}
	return facts
}
