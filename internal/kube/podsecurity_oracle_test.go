package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The PodSecurity rules as a test oracle: which rules the pods BuildPod
// makes break (the API server's admission decides at run time; the
// cluster backend asks it by dry run, preflight.Check).

// baselineCaps are the capabilities PodSecurity baseline lets a container
// add; restricted allows NET_BIND_SERVICE only.
var baselineCaps = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// safeSysctls are the sysctls PodSecurity baseline allows (v1.30).
var safeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}

// RestrictedViolations lists the PodSecurity rules (v1.30) p breaks, each
// "baseline: …" (refused by a namespace enforcing baseline or restricted)
// or "restricted: …" (refused under restricted only); none for a pod
// restricted admits. It checks what BuildPod can produce — host
// namespaces, privileged containers, added capabilities, hostPath volumes,
// host ports, sysctls, seccomp, privilege escalation, dropped capabilities,
// non-root — not AppArmor, SELinux or /proc mount types, which BuildPod
// never sets.
func RestrictedViolations(p *corev1.Pod) []string {
	var base, restr []string
	s := &p.Spec
	psc := s.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	for _, h := range []struct {
		on   bool
		name string
	}{{s.HostNetwork, "hostNetwork"}, {s.HostPID, "hostPID"}, {s.HostIPC, "hostIPC"}} {
		if h.on {
			base = append(base, h.name)
		}
	}
	var hostPaths []string
	for _, v := range s.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	if len(hostPaths) > 0 {
		base = append(base, "hostPath volumes "+strings.Join(hostPaths, ", "))
	}
	for _, sc := range psc.Sysctls {
		if !slices.Contains(safeSysctls, sc.Name) {
			base = append(base, "sysctl "+sc.Name)
		}
	}
	for _, c := range slices.Concat(s.InitContainers, s.Containers) {
		b, r := containerViolations(c, psc)
		base, restr = append(base, b...), append(restr, r...)
	}
	out := make([]string, 0, len(base)+len(restr))
	for _, v := range base {
		out = append(out, "baseline: "+v)
	}
	for _, v := range restr {
		out = append(out, "restricted: "+v)
	}
	return out
}

// containerViolations are c's breaches of baseline and restricted, given
// its pod's security context.
func containerViolations(c corev1.Container, psc *corev1.PodSecurityContext) (base, restr []string) {
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	who := "container " + c.Name
	if sc.Privileged != nil && *sc.Privileged {
		base = append(base, who+" privileged")
	}
	for _, port := range c.Ports {
		if port.HostPort != 0 {
			base = append(base, fmt.Sprintf("%s hostPort %d", who, port.HostPort))
		}
	}
	var notBaseline, notRestricted []string
	dropsAll := false
	if caps := sc.Capabilities; caps != nil {
		for _, a := range caps.Add {
			name := strings.TrimPrefix(string(a), "CAP_")
			if !slices.Contains(baselineCaps, name) {
				notBaseline = append(notBaseline, string(a))
			} else if name != "NET_BIND_SERVICE" {
				notRestricted = append(notRestricted, string(a))
			}
		}
		dropsAll = slices.Contains(caps.Drop, "ALL")
	}
	if len(notBaseline) > 0 {
		base = append(base, who+" adds capabilities "+joinCaps(notBaseline))
	}
	if len(notRestricted) > 0 {
		restr = append(restr, who+" adds capabilities "+joinCaps(notRestricted))
	}
	if !dropsAll {
		restr = append(restr, who+" does not drop ALL capabilities")
	}
	seccomp := psc.SeccompProfile
	if sc.SeccompProfile != nil {
		seccomp = sc.SeccompProfile
	}
	switch {
	case seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeUnconfined:
		base = append(base, who+" seccompProfile Unconfined")
	case seccomp == nil:
		restr = append(restr, who+" has no seccompProfile RuntimeDefault or Localhost")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		restr = append(restr, who+" allows privilege escalation")
	}
	nonRoot := psc.RunAsNonRoot
	if sc.RunAsNonRoot != nil {
		nonRoot = sc.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		restr = append(restr, who+" runAsNonRoot not true")
	}
	user := psc.RunAsUser
	if sc.RunAsUser != nil {
		user = sc.RunAsUser
	}
	if user != nil && *user == 0 {
		restr = append(restr, who+" runAsUser 0")
	}
	return base, restr
}

// joinCaps joins capability names.
func joinCaps(caps []string) string { return strings.Join(caps, ", ") }

// PodSecurityLevel is the least PodSecurity level that admits p:
// "restricted", "baseline" or "privileged" (by RestrictedViolations).
func PodSecurityLevel(p *corev1.Pod) string {
	level := "restricted"
	for _, v := range RestrictedViolations(p) {
		if strings.HasPrefix(v, "baseline: ") {
			return "privileged"
		}
		level = "baseline"
	}
	return level
}
