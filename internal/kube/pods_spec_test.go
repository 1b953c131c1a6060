package kube

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// The pods of a cluster run, as the integrator builds them.
var (
	benchTolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "bench", Effect: corev1.TaintEffectNoSchedule}}
	serverSpec       = PodSpec{Name: "srv-b", Node: "w2", Role: "server", Image: "registry.example/cnibench:v1",
		Args: []string{"serve", "--listen", ":5201"}, Ports: []int32{5201}, TokenSecret: "tok",
		ImagePullSecrets: []string{"regcred"}, ServiceAccount: "cnibench", Tolerations: benchTolerations,
		Resources: mustGuaranteed("1", "512Mi")}
	clientSpec = PodSpec{Name: "cli-a", Node: "w1", Role: "client", Image: "i", Args: []string{"k8s", "agent", "idle"}}
	capsSpec   = PodSpec{Name: "egress", Node: "w1", Role: "client", Image: "i", Args: []string{"k8s", "agent", "idle"},
		Capabilities: []corev1.Capability{"NET_ADMIN", "BPF"}}
	hostSpec = PodSpec{Name: "host-b", Node: "w2", Role: "host-server", Image: "i", Args: []string{"serve"},
		HostNetwork: true, Privileged: true, HostPaths: []HostPath{{HostPath: "/sys/fs/cgroup", MountPath: "/host/cgroup", ReadOnly: true}}}
	hostCapsSpec = PodSpec{Name: "host-c", Node: "w2", Image: "i", HostNetwork: true, Capabilities: []corev1.Capability{"NET_RAW"}}
)

func mustGuaranteed(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

func TestBuildPodGolden(t *testing.T) {
	var buf bytes.Buffer
	for _, s := range []PodSpec{serverSpec, clientSpec, capsSpec, hostSpec, hostCapsSpec} {
		b, err := yaml.Marshal(BuildPod("bench", "r1", s))
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	golden := filepath.Join("testdata", "pods.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("BuildPod's pods differ from %s (go test -update rewrites it):\n%s", golden, buf.String())
	}
}

func TestBuildPodSecurity(t *testing.T) {
	sysAdmin := PodSpec{Name: "x", Image: "i", Capabilities: []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}}
	tests := []struct {
		name  string
		spec  PodSpec
		level string
		viol  []string // RestrictedViolations, exactly
		check func(*corev1.Pod) bool
	}{
		{name: "plain pod is restricted", spec: clientSpec, level: "restricted", check: func(p *corev1.Pod) bool {
			psc, sc := p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext
			return *psc.RunAsNonRoot && *psc.RunAsUser == NonRootID && *psc.RunAsGroup == NonRootID &&
				psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault &&
				psc.Sysctls[0] == pingGroupRange && !*sc.AllowPrivilegeEscalation &&
				reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && sc.Capabilities.Add == nil && sc.Privileged == nil
		}},
		{name: "server with options is restricted", spec: serverSpec, level: "restricted", check: func(p *corev1.Pod) bool {
			s := p.Spec
			r := s.Containers[0].Resources
			return s.ServiceAccountName == "cnibench" && !*s.AutomountServiceAccountToken &&
				reflect.DeepEqual(s.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) &&
				reflect.DeepEqual(s.Tolerations, benchTolerations) &&
				r.Limits.Cpu().Equal(resource.MustParse("1")) && r.Requests.Memory().Equal(resource.MustParse("512Mi"))
		}},
		{name: "capabilities: drop ALL, add theirs, root", spec: capsSpec, level: "privileged",
			viol: []string{"baseline: container cnibench adds capabilities NET_ADMIN, BPF",
				"restricted: container cnibench has no seccompProfile RuntimeDefault or Localhost",
				"restricted: container cnibench runAsNonRoot not true"},
			check: func(p *corev1.Pod) bool {
				psc, sc := p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext
				return psc.RunAsNonRoot == nil && psc.RunAsUser == nil && psc.Sysctls[0] == pingGroupRange && !*sc.AllowPrivilegeEscalation &&
					reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) &&
					reflect.DeepEqual(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "BPF"})
			}},
		{name: "SYS_ADMIN keeps privilege escalation", spec: sysAdmin, level: "privileged",
			viol: []string{"baseline: container cnibench adds capabilities NET_ADMIN, SYS_ADMIN",
				"restricted: container cnibench has no seccompProfile RuntimeDefault or Localhost",
				"restricted: container cnibench allows privilege escalation",
				"restricted: container cnibench runAsNonRoot not true"},
			check: func(p *corev1.Pod) bool { return p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation == nil }},
		{name: "privileged host pod unchanged", spec: hostSpec, level: "privileged",
			viol: []string{"baseline: hostNetwork", "baseline: hostPath volumes /sys/fs/cgroup", "baseline: container cnibench privileged",
				"restricted: container cnibench does not drop ALL capabilities",
				"restricted: container cnibench has no seccompProfile RuntimeDefault or Localhost",
				"restricted: container cnibench allows privilege escalation",
				"restricted: container cnibench runAsNonRoot not true"},
			check: func(p *corev1.Pod) bool {
				sc := p.Spec.Containers[0].SecurityContext
				return p.Spec.SecurityContext == nil && *sc.Privileged && sc.Capabilities == nil && sc.AllowPrivilegeEscalation == nil
			}},
		{name: "host network with capabilities unchanged", spec: hostCapsSpec, level: "privileged", check: func(p *corev1.Pod) bool {
			sc := p.Spec.Containers[0].SecurityContext
			return p.Spec.SecurityContext == nil && sc.Capabilities.Drop == nil && sc.Capabilities.Add[0] == "NET_RAW"
		}},
		{name: "host network alone", spec: PodSpec{Name: "h", Image: "i", HostNetwork: true}, level: "privileged", check: func(p *corev1.Pod) bool {
			return p.Spec.SecurityContext == nil && p.Spec.Containers[0].SecurityContext == nil
		}},
		{name: "no options, none set", spec: clientSpec, level: "restricted", check: func(p *corev1.Pod) bool {
			s := p.Spec
			r := s.Containers[0].Resources
			return s.ServiceAccountName == "" && s.ImagePullSecrets == nil && s.Tolerations == nil && r.Requests == nil && r.Limits == nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := BuildPod("ns", "r", tt.spec)
			if !tt.check(p) {
				t.Errorf("wrong pod: %+v", p.Spec)
			}
			if got := PodSecurityLevel(p); got != tt.level {
				t.Errorf("PodSecurityLevel = %q, want %q (%q)", got, tt.level, RestrictedViolations(p))
			}
			if tt.viol != nil {
				if got := RestrictedViolations(p); !reflect.DeepEqual(got, tt.viol) {
					t.Errorf("RestrictedViolations =\n%q, want\n%q", got, tt.viol)
				}
			}
		})
	}
}

func TestBuildPodDoesNotAlias(t *testing.T) {
	s := serverSpec
	s.Tolerations = append([]corev1.Toleration(nil), benchTolerations...)
	s.Resources = mustGuaranteed("1", "1Gi")
	p := BuildPod("ns", "r", s)
	s.Tolerations[0].Key = "changed"
	s.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("9")
	if p.Spec.Tolerations[0].Key != "dedicated" || !p.Spec.Containers[0].Resources.Limits.Cpu().Equal(resource.MustParse("1")) {
		t.Errorf("BuildPod shares the spec's slices or maps: %+v", p.Spec)
	}
}

func TestRestrictedViolationsBaselineOnly(t *testing.T) {
	// A pod restricted refuses but baseline admits: root, a baseline
	// capability, no seccomp profile.
	p := BuildPod("ns", "r", PodSpec{Name: "x", Image: "i", Capabilities: []corev1.Capability{"CHOWN"}})
	want := []string{"restricted: container cnibench adds capabilities CHOWN",
		"restricted: container cnibench has no seccompProfile RuntimeDefault or Localhost",
		"restricted: container cnibench runAsNonRoot not true"}
	if got := RestrictedViolations(p); !reflect.DeepEqual(got, want) {
		t.Errorf("RestrictedViolations = %q, want %q", got, want)
	}
	if got := PodSecurityLevel(p); got != "baseline" {
		t.Errorf("PodSecurityLevel = %q", got)
	}
	// Rules BuildPod never breaks, set by hand.
	p.Spec.HostPID = true
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
	p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: "net.core.somaxconn", Value: "1024"})
	p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	p.Spec.SecurityContext.RunAsUser = new(int64(0))
	got := strings.Join(RestrictedViolations(p), "|")
	for _, w := range []string{"baseline: hostPID", "baseline: sysctl net.core.somaxconn", "baseline: container cnibench hostPort 80",
		"baseline: container cnibench seccompProfile Unconfined", "restricted: container cnibench runAsUser 0"} {
		if !strings.Contains(got, w) {
			t.Errorf("RestrictedViolations %q lacks %q", got, w)
		}
	}
}

func TestParseResources(t *testing.T) {
	q := resource.MustParse
	list := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem)}
	}
	for _, tt := range []struct {
		in   string
		want corev1.ResourceRequirements
		err  string
	}{
		{in: "none"},
		{in: " none "},
		{in: "cpu=1,memory=512Mi", want: corev1.ResourceRequirements{Requests: list("1", "512Mi"), Limits: list("1", "512Mi")}},
		{in: "memory=1Gi, cpu=500m", want: corev1.ResourceRequirements{Requests: list("500m", "1Gi"), Limits: list("500m", "1Gi")}},
		{in: "cpu=2,memory=1Gi,requests-only", want: corev1.ResourceRequirements{Requests: list("2", "1Gi")}},
		{in: "", err: "--pod-resources is empty; use none, cpu=QUANTITY,memory=QUANTITY"},
		{in: "cpu=1", err: `--pod-resources "cpu=1": memory missing`},
		{in: "cpu=1,memory=1Gi,gpu=1", err: `unknown item "gpu=1"`},
		{in: "cpu=1,cpu=2,memory=1Gi", err: "cpu given twice"},
		{in: "cpu=one,memory=1Gi", err: `--pod-resources "cpu=one,memory=1Gi": cpu "one" is not a quantity (e.g. 1 or 500m)`},
		{in: "cpu=0,memory=1Gi", err: `cpu "0" must be above zero`},
		{in: "cpu=1,memory=-1Gi", err: `memory "-1Gi" must be above zero`},
		{in: "requests-only", err: "cpu missing"},
	} {
		got, err := ParseResources(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseResources(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !equalResources(got, tt.want) {
			t.Errorf("ParseResources(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// equalResources compares requirements by quantity values.
func equalResources(a, b corev1.ResourceRequirements) bool {
	eq := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !v.Equal(w) {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}
