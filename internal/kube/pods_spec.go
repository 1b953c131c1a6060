package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// NonRootID is the user and group of the pods that run unprivileged, as
// PodSecurity "restricted" asks (the image's /cnibench is 0755; its servers
// listen on ports above 1024).
const NonRootID int64 = 65532

// pingGroupRange lets every group open ICMP datagram sockets (icmp_echo).
// net.ipv4.ping_group_range is a namespaced sysctl Kubernetes counts as
// safe (allowed by every kubelet without --allowed-unsafe-sysctls, and by
// PodSecurity baseline and restricted); runtimes default it to "1 0", no
// group.
var pingGroupRange = corev1.Sysctl{Name: "net.ipv4.ping_group_range", Value: "0 2147483647"}

// securityContexts returns the pod's and the container's security
// contexts for s:
//
//   - privileged or hostNetwork pods: as they always were (privileged, or
//     the added capabilities only), no pod-level context for hostNetwork
//     pods (the sysctl would change the node's);
//   - pods with Capabilities (scenario pods: NET_ADMIN, BPF): all
//     capabilities dropped but theirs, no privilege escalation (unless
//     SYS_ADMIN is added, which the API forbids with it); they run as the
//     image's user, root, since a non-root process does not get the added
//     capabilities, and keep the runtime's seccomp default (RuntimeDefault
//     profiles refuse bpf() on some runtimes): they need PodSecurity
//     "privileged" (see RestrictedViolations);
//   - all other pods pass PodSecurity "restricted": non-root (NonRootID),
//     no privilege escalation, all capabilities dropped, seccomp
//     RuntimeDefault.
//
// Pods not on the host network also get the ping_group_range sysctl.
func securityContexts(s PodSpec) (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	var pod *corev1.PodSecurityContext
	if !s.HostNetwork {
		pod = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{pingGroupRange}}
	}
	switch {
	case s.Privileged:
		return pod, &corev1.SecurityContext{Privileged: new(true)}
	case s.HostNetwork:
		if len(s.Capabilities) == 0 {
			return pod, nil
		}
		return pod, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: slices.Clone(s.Capabilities)}}
	case len(s.Capabilities) > 0:
		c := &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
			Drop: []corev1.Capability{"ALL"},
			Add:  slices.Clone(s.Capabilities),
		}}
		if !slices.ContainsFunc(s.Capabilities, func(c corev1.Capability) bool {
			return strings.TrimPrefix(string(c), "CAP_") == "SYS_ADMIN"
		}) {
			c.AllowPrivilegeEscalation = new(false)
		}
		return pod, c
	}
	pod.RunAsNonRoot = new(true)
	pod.RunAsUser = new(NonRootID)
	pod.RunAsGroup = new(NonRootID)
	pod.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	return pod, &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// resourcesSyntax is the help ParseResources' errors end with.
const resourcesSyntax = "use none, cpu=QUANTITY,memory=QUANTITY (Guaranteed) or cpu=QUANTITY,memory=QUANTITY,requests-only (Burstable, no limits), e.g. cpu=1,memory=512Mi"

// ParseResources parses the --pod-resources flag:
//
//   - "none": no requests nor limits (BestEffort, the first evicted);
//   - "cpu=1,memory=512Mi": requests equal to limits (Guaranteed: the last
//     a node evicts, whole CPUs exclusive under the static CPU manager; the
//     CPU limit is a CFS quota, a pod that needs more is throttled);
//   - "cpu=1,memory=512Mi,requests-only": requests only (Burstable): the
//     scheduler and the kubelet's admission count them, and the pod is not
//     throttled above them.
//
// cpu and memory are both required, as Kubernetes quantities above zero.
func ParseResources(s string) (corev1.ResourceRequirements, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return corev1.ResourceRequirements{}, nil
	}
	if s == "" {
		return corev1.ResourceRequirements{}, fmt.Errorf("--pod-resources is empty; %s", resourcesSyntax)
	}
	vals := map[string]string{}
	requestsOnly := false
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "requests-only" {
			requestsOnly = true
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok || (k != "cpu" && k != "memory") {
			return corev1.ResourceRequirements{}, fmt.Errorf("--pod-resources %q: unknown item %q; %s", s, item, resourcesSyntax)
		}
		if _, dup := vals[k]; dup {
			return corev1.ResourceRequirements{}, fmt.Errorf("--pod-resources %q: %s given twice; %s", s, k, resourcesSyntax)
		}
		vals[k] = v
	}
	for _, k := range []string{"cpu", "memory"} {
		if _, ok := vals[k]; !ok {
			return corev1.ResourceRequirements{}, fmt.Errorf("--pod-resources %q: %s missing; %s", s, k, resourcesSyntax)
		}
	}
	list, err := resourceList(vals, fmt.Sprintf("--pod-resources %q:", s))
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	if requestsOnly {
		return corev1.ResourceRequirements{Requests: list}, nil
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// resourceList parses cpu and memory quantities; flag starts the errors.
func resourceList(vals map[string]string, flag string) (corev1.ResourceList, error) {
	list := corev1.ResourceList{}
	for _, k := range []string{"cpu", "memory"} {
		q, err := resource.ParseQuantity(vals[k])
		if err != nil {
			return nil, fmt.Errorf("%s %s %q is not a quantity (e.g. %s); %s", flag, k, vals[k], map[string]string{"cpu": "1 or 500m", "memory": "512Mi"}[k], resourcesSyntax)
		}
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("%s %s %q must be above zero; %s", flag, k, vals[k], resourcesSyntax)
		}
		list[corev1.ResourceName(k)] = q
	}
	return list, nil
}
