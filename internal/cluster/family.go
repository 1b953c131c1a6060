package cluster

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// IP families (--ip-family). A run measures every pod-network path once
// per family it asks for: ipv4 (the default), ipv6, or dual (both; the
// IPv6 paths are named with an "-ipv6" suffix, and every path carries
// the ip_family label). The services are created with the families
// asked for (ipFamilyPolicy SingleStack, or RequireDualStack for dual),
// so that the cluster refuses in one line what it cannot do. The
// node-to-node baseline, the pairs and the LoadBalancer paths use the
// first family.
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
	FamilyDual = "dual"
)

// families is the families of --ip-family, in order.
func families(f string) []string {
	switch f {
	case FamilyIPv6:
		return []string{FamilyIPv6}
	case FamilyDual:
		return []string{FamilyIPv4, FamilyIPv6}
	}
	return []string{FamilyIPv4}
}

// validFamily checks --ip-family.
func validFamily(f string) error {
	switch f {
	case "", FamilyIPv4, FamilyIPv6, FamilyDual:
		return nil
	}
	return fmt.Errorf("--ip-family %q: must be ipv4, ipv6 or dual", f)
}

// isFamily tells whether address s is of family f.
func isFamily(s, f string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	return a.Unmap().Is4() == (f == FamilyIPv4)
}

// podIPOf is p's address of family f ("" if none).
func podIPOf(p *corev1.Pod, f string) string {
	for _, ip := range p.Status.PodIPs {
		if isFamily(ip.IP, f) {
			return ip.IP
		}
	}
	if isFamily(p.Status.PodIP, f) {
		return p.Status.PodIP
	}
	return ""
}

// nodeIPOf is n's InternalIP of family f ("" if none).
func nodeIPOf(n *corev1.Node, f string) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && isFamily(a.Address, f) {
			return a.Address
		}
	}
	return ""
}

// serviceIPOf is s's cluster IP of family f ("" if none).
func serviceIPOf(s *corev1.Service, f string) string {
	for _, ip := range s.Spec.ClusterIPs {
		if isFamily(ip, f) {
			return ip
		}
	}
	if isFamily(s.Spec.ClusterIP, f) {
		return s.Spec.ClusterIP
	}
	return ""
}

// withFamilies sets a service's IP families to fams: SingleStack for
// one, RequireDualStack for two.
func withFamilies(fams []string) func(*corev1.Service) {
	return func(s *corev1.Service) {
		policy := corev1.IPFamilyPolicySingleStack
		if len(fams) > 1 {
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		s.Spec.IPFamilyPolicy = &policy
		s.Spec.IPFamilies = nil
		for _, f := range fams {
			if f == FamilyIPv6 {
				s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv6Protocol)
			} else {
				s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv4Protocol)
			}
		}
	}
}

// familySuffix is the path-name suffix of family f in a run of fams.
func familySuffix(f string, fams []string) string {
	if len(fams) > 1 && f == FamilyIPv6 {
		return "-ipv6"
	}
	return ""
}

// nodeAddrs and podAddrs list addresses for errors.
func nodeAddrs(n *corev1.Node) string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out = append(out, a.Address)
		}
	}
	return strings.Join(out, ", ")
}

func podAddrs(p *corev1.Pod) string {
	var out []string
	for _, ip := range p.Status.PodIPs {
		out = append(out, ip.IP)
	}
	if len(out) == 0 {
		return p.Status.PodIP
	}
	return strings.Join(out, ", ")
}
