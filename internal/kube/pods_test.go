package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestBuildPod(t *testing.T) {
	p := BuildPod("ns", "r1", PodSpec{
		Name: "srv", Node: "w1", Role: "server", Image: "cnibench:dev",
		Args: []string{"serve", "--port", "5201"}, HostNetwork: true, Privileged: true,
		Ports:       []int32{5201},
		HostPaths:   []HostPath{{HostPath: "/sys/fs/bpf", MountPath: "/sys/fs/bpf"}, {HostPath: "/etc/cni/net.d", MountPath: "/host/cni", ReadOnly: true}},
		Labels:      map[string]string{"app": "x"},
		TokenSecret: "tok",
	})
	s := p.Spec
	c := s.Containers[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"namespace/name", p.Namespace == "ns" && p.Name == "srv"},
		{"labels", p.Labels[ManagedByKey] == ManagedBy && p.Labels[RunKey] == "r1" && p.Labels[RoleKey] == "server" && p.Labels["app"] == "x"},
		{"nodeName", s.NodeName == "w1" && s.NodeSelector == nil && s.Affinity == nil},
		{"restart/grace", s.RestartPolicy == corev1.RestartPolicyNever && *s.TerminationGracePeriodSeconds == 2},
		{"no SA token", s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken},
		{"host network DNS", s.HostNetwork && s.DNSPolicy == corev1.DNSClusterFirstWithHostNet},
		{"one container", len(s.Containers) == 1 && c.Name == ContainerName && c.Image == "cnibench:dev"},
		{"command/args", len(c.Command) == 1 && c.Command[0] == "/cnibench" && strings.Join(c.Args, " ") == "serve --port 5201"},
		{"pull policy", c.ImagePullPolicy == corev1.PullIfNotPresent},
		{"privileged", c.SecurityContext != nil && *c.SecurityContext.Privileged},
		{"ports", len(c.Ports) == 2 && c.Ports[0].ContainerPort == 5201 && c.Ports[1].Protocol == corev1.ProtocolUDP},
		{"token env", len(c.Env) == 1 && c.Env[0].Name == TokenEnv && c.Env[0].ValueFrom.SecretKeyRef.Name == "tok" && c.Env[0].ValueFrom.SecretKeyRef.Key == TokenKey},
		{"volumes", len(s.Volumes) == 2 && s.Volumes[1].HostPath.Path == "/etc/cni/net.d" && c.VolumeMounts[1].MountPath == "/host/cni" && c.VolumeMounts[1].ReadOnly && !c.VolumeMounts[0].ReadOnly && c.VolumeMounts[1].Name == s.Volumes[1].Name},
		{"no resources", c.Resources.Requests == nil && c.Resources.Limits == nil},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: wrong in %+v", ch.what, p)
		}
	}

	p = BuildPod("ns", "r1", PodSpec{Name: "cli", Node: "w2", Image: "i", ImagePullPolicy: corev1.PullNever})
	c = p.Spec.Containers[0]
	if c.SecurityContext.Privileged != nil || p.Spec.HostNetwork || p.Spec.DNSPolicy != "" || c.Env != nil || c.ImagePullPolicy != corev1.PullNever || p.Spec.Volumes != nil {
		t.Errorf("plain pod: %+v", p)
	}
	if _, ok := p.Labels[RoleKey]; ok {
		t.Errorf("role label without role: %v", p.Labels)
	}
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// podSteps makes the fake's pod gets return the pod with status steps[i]
// applied at the i-th get (the last one from then on).
func podSteps(cs *fake.Clientset, steps ...func(*corev1.Pod)) {
	n := 0
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		obj, err := cs.Tracker().Get(podsGVR, g.GetNamespace(), g.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		steps[min(n, len(steps)-1)](p)
		n++
		return true, p, nil
	})
}

func pending(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(100, 0)},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [cnibench]", LastTransitionTime: metav1.Unix(200, 0)},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "i", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
}

func running(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.244.1.5"
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		pending(p)
		p.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
	}
}

func TestStartPod(t *testing.T) {
	runningNoIP := func(p *corev1.Pod) { running(p); p.Status.PodIP = "" }
	tests := []struct {
		name  string
		steps []func(*corev1.Pod)
		err   []string
		slow  bool // ends at the timeout
	}{
		{name: "runs", steps: []func(*corev1.Pod){pending, pending, runningNoIP, running}},
		{name: "image never pull", steps: []func(*corev1.Pod){pending, waiting("ErrImageNeverPull", "Container image \"i\" is not present with pull policy of Never")},
			err: []string{"ErrImageNeverPull", "is not present", "cnibench image build --out", "--image"}},
		{name: "pull backoff", steps: []func(*corev1.Pod){waiting("ImagePullBackOff", "Back-off pulling image \"i\"")}, err: []string{"ImagePullBackOff", "Back-off", "load it on every node"}},
		{name: "crash loop", steps: []func(*corev1.Pod){waiting("CrashLoopBackOff", "back-off 10s\nrestarting")}, err: []string{"CrashLoopBackOff: back-off 10s restarting"}},
		{name: "terminated", steps: []func(*corev1.Pod){func(p *corev1.Pod) {
			running(p)
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "bad flag"}}
		}}, err: []string{"terminated: exit code 2, reason Error: bad flag"}},
		{name: "kubelet rejects", steps: []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "OutOfcpu", "Node didn't have enough resource: cpu"
		}}, err: []string{"Failed: OutOfcpu: Node didn't have enough resource"}},
		// The kubelet retries these: seen right after the run's secret
		// was created, gone a moment later.
		{name: "secret cache catches up", steps: []func(*corev1.Pod){pending,
			waiting("CreateContainerConfigError", "failed to sync secret cache: timed out waiting for the condition"), running}},
		{name: "config error persists", steps: []func(*corev1.Pod){waiting("CreateContainerConfigError", "secret \"x\" not found")}, slow: true,
			err: []string{"not running after", "CreateContainerConfigError"}},
		{name: "timeout", steps: []func(*corev1.Pod){pending}, slow: true,
			err: []string{"not running after", "phase Pending", "Ready=False ContainersNotReady: containers with unready status: [cnibench]", "container cnibench waiting: ContainerCreating"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			podSteps(cs, tt.steps...)
			timeout := 300 * time.Millisecond
			if !tt.slow && tt.err != nil {
				timeout = time.Minute // must fail fast anyway
			}
			start := time.Now()
			p, err := StartPod(context.Background(), cs, BuildPod("ns", "r", PodSpec{Name: "srv", Node: "w1", Image: "i"}), timeout)
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if p.Status.PodIP != "10.244.1.5" {
					t.Errorf("pod IP %q", p.Status.PodIP)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error has several lines: %q", err)
			}
			for _, want := range append(tt.err, "ns/srv") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestStartPodCreateError(t *testing.T) {
	pod := BuildPod("ns", "r", PodSpec{Name: "srv", Node: "w1", Image: "i"})
	cs := fake.NewClientset(pod.DeepCopy())
	_, err := StartPod(context.Background(), cs, pod, time.Second)
	if err == nil || !strings.Contains(err.Error(), "create pod ns/srv") || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("err = %v", err)
	}
}

func TestStartPodCanceled(t *testing.T) {
	cs := fake.NewClientset()
	podSteps(cs, pending)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := StartPod(ctx, cs, BuildPod("ns", "r", PodSpec{Name: "srv", Node: "w1", Image: "i"}), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("err = %v", err)
	}
}
