package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// ContainerName is the name of the one container of cnibench's pods.
const ContainerName = "cnibench"

// TokenEnv is the environment variable that carries the token to the
// pods (see PodSpec.TokenSecret).
const TokenEnv = "CNIBENCH_TOKEN"

// HostPath is a directory or file of the node mounted into a pod.
type HostPath struct {
	// HostPath is the path on the node.
	HostPath string
	// MountPath is where it appears in the container.
	MountPath string
	// ReadOnly mounts it read-only.
	ReadOnly bool
}

// PodSpec describes one of cnibench's pods, which run the cnibench binary
// (the image's only file, /cnibench).
type PodSpec struct {
	// Name of the pod.
	Name string
	// Node is the name of the node the pod runs on.
	Node string
	// Role is the value of the RoleKey label ("server", "client", …).
	Role string
	// Image holds /cnibench.
	Image string
	// Args are the arguments of /cnibench.
	Args []string
	// HostNetwork runs the pod in the node's network namespace.
	HostNetwork bool
	// Privileged runs the container privileged (capture and helper pods).
	Privileged bool
	// Capabilities are added to an unprivileged container's (e.g.
	// NET_ADMIN and BPF for a pod that filters its own egress). Such a pod
	// drops all the others but runs as root: PodSecurity baseline and
	// restricted refuse it.
	Capabilities []corev1.Capability
	// Ports the pod listens on, declared for TCP and for UDP
	// (informational: services target port numbers).
	Ports []int32
	// HostPaths are mounted into the container.
	HostPaths []HostPath
	// Labels are added to the pod's own.
	Labels map[string]string
	// TokenSecret, if not "", names a secret whose key TokenKey becomes
	// the environment variable TokenEnv.
	TokenSecret string
	// ImagePullPolicy defaults to IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// ImagePullSecrets name the namespace's secrets for a private
	// registry.
	ImagePullSecrets []string
	// ServiceAccount is the pod's service account ("" is the namespace's
	// default); its token is never mounted.
	ServiceAccount string
	// Tolerations let the pod stay on a node with NoExecute taints (and
	// document the NoSchedule ones it was placed despite; see Placement).
	Tolerations []corev1.Toleration
	// Resources are the container's requests and limits (none: BestEffort;
	// see GuaranteedResources and ParseResources).
	Resources corev1.ResourceRequirements
}

// BuildPod returns the pod of s for run runID in namespace ns, labelled
// ManagedByKey, RunKey, RoleKey and s.Labels.
//
// The pod is pinned to s.Node with spec.nodeName rather than a node
// selector: that bypasses the scheduler, so it needs neither the node's
// kubernetes.io/hostname label (which may differ from its name) nor
// tolerations of its NoSchedule taints, and it fails at once, rather than
// staying Pending, when the kubelet cannot admit it. The pod runs once
// (restartPolicy Never), stops within 2 s, has no service account token,
// s's tolerations, image pull secrets, service account and resources.
//
// Pods neither privileged nor on the host network nor with added
// capabilities pass PodSecurity "restricted": they run as NonRootID, with
// no privilege escalation, no capabilities and seccomp RuntimeDefault; the
// others keep what they need (see securityContexts), and
// RestrictedViolations says which rules each breaks.
func BuildPod(ns, runID string, s PodSpec) *corev1.Pod {
	l := runLabels(runID)
	if s.Role != "" {
		l[RoleKey] = s.Role
	}
	maps.Copy(l, s.Labels)
	pull := s.ImagePullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	c := corev1.Container{
		Name:            ContainerName,
		Image:           s.Image,
		Command:         []string{"/cnibench"},
		Args:            append([]string(nil), s.Args...),
		ImagePullPolicy: pull,
		Resources:       *s.Resources.DeepCopy(),
	}
	for _, p := range s.Ports {
		c.Ports = append(c.Ports,
			corev1.ContainerPort{ContainerPort: p, Protocol: corev1.ProtocolTCP},
			corev1.ContainerPort{ContainerPort: p, Protocol: corev1.ProtocolUDP})
	}
	podSC, containerSC := securityContexts(s)
	c.SecurityContext = containerSC
	if s.TokenSecret != "" {
		c.Env = append(c.Env, corev1.EnvVar{Name: TokenEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.TokenSecret},
				Key:                  TokenKey,
			},
		}})
	}
	var vols []corev1.Volume
	for i, h := range s.HostPaths {
		name := fmt.Sprintf("host-%d", i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: h.HostPath},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: h.MountPath, ReadOnly: h.ReadOnly})
	}
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns, Labels: l},
		Spec: corev1.PodSpec{
			NodeName:                      s.Node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(2)),
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			HostNetwork:                   s.HostNetwork,
			ServiceAccountName:            s.ServiceAccount,
			Tolerations:                   slices.Clone(s.Tolerations),
			SecurityContext:               podSC,
			Containers:                    []corev1.Container{c},
			Volumes:                       vols,
		},
	}
	for _, name := range s.ImagePullSecrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	if s.HostNetwork {
		// Keep cluster DNS (the default policy would use the node's).
		p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	return p
}

// failReasons are the Waiting reasons after which a container will not
// start without someone's help: StartPod fails at once on them. The
// kubelet retries the others (CreateContainerConfigError "failed to sync
// secret cache" right after the run's secret was created, container
// creation errors): StartPod waits for them to clear, and its timeout
// error names them.
var failReasons = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"ErrImageNeverPull": true,
	"InvalidImageName":  true,
	"CrashLoopBackOff":  true,
}

// imageHint is appended to image pull failures.
const imageHint = " (import the image: cnibench image build --out FILE, and load it on every node; or pass --image)"

// StartPod creates pod and waits, at most timeout, until it runs: phase
// Running, every container running and a pod IP. It fails at once when a
// container cannot start (image pull errors, crash loops) or has
// terminated, or when the pod failed, with a
// one-line error quoting the reason and message. On error the pod is left
// in place, for DeleteRun. The create is retried as RetryPolicy says (a
// retry that meets the pod made by an earlier attempt takes it); a look
// that fails with passing trouble (Retryable) is taken as "not yet".
func StartPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, timeout time.Duration) (*corev1.Pod, error) {
	ns, name := pod.Namespace, pod.Name
	pods := cs.CoreV1().Pods(ns)
	_, err := CreateOwn(ctx, "create pod "+ns+"/"+name, pod,
		func(ctx context.Context) (*corev1.Pod, error) { return pods.Create(ctx, pod, metav1.CreateOptions{}) },
		func(ctx context.Context) (*corev1.Pod, error) { return pods.Get(ctx, name, metav1.GetOptions{}) })
	if err != nil {
		return nil, err
	}
	Logger(ctx).Debug("pod created", "pod", ns+"/"+name, "node", pod.Spec.NodeName)
	var last *corev1.Pod
	var lastErr error // the last passing API error, for the timeout's message
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var p *corev1.Pod
		transient, err := Once(ctx, "get pod "+ns+"/"+name, func(ctx context.Context) (err error) {
			p, err = pods.Get(ctx, name, metav1.GetOptions{})
			return err
		})
		if transient {
			lastErr = err
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last, lastErr = p, nil
		if err := podFailure(p); err != nil {
			return false, err
		}
		return podRunning(p), nil
	})
	switch {
	case err == nil:
		Logger(ctx).Debug("pod running", "pod", ns+"/"+name, "node", last.Spec.NodeName, "ip", last.Status.PodIP)
		return last, nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		state := podState(last)
		if lastErr != nil {
			state += "; the last look failed: " + oneLine(lastErr.Error())
		}
		return nil, fmt.Errorf("pod %s/%s (node %s) not running after %v: %s", ns, name, pod.Spec.NodeName, timeout, state)
	case wait.Interrupted(err):
		return nil, fmt.Errorf("wait for pod %s/%s: %w", ns, name, ctx.Err())
	default:
		return nil, err
	}
}

// podRunning tells whether p runs with all its containers and has an IP.
func podRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return false
	}
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// podFailure returns why p will not run, or nil if it still may.
func podFailure(p *corev1.Pod) error {
	id := p.Namespace + "/" + p.Name
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && failReasons[w.Reason] {
			hint := ""
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull":
				hint = imageHint
			}
			return fmt.Errorf("pod %s container %s (image %s): %s: %s%s", id, c.Name, c.Image, w.Reason, oneLine(w.Message), hint)
		}
		if t := c.State.Terminated; t != nil {
			return fmt.Errorf("pod %s container %s terminated: exit code %d, reason %s: %s", id, c.Name, t.ExitCode, t.Reason, oneLine(t.Message))
		}
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Errorf("pod %s %s: %s: %s", id, p.Status.Phase, p.Status.Reason, oneLine(p.Status.Message))
	}
	return nil
}

// podState describes a pod that is not running yet: its phase, the last
// condition with a message, and its containers' waiting reasons.
func podState(p *corev1.Pod) string {
	if p == nil {
		return "pod never seen"
	}
	s := "phase " + string(p.Status.Phase)
	if s == "phase " {
		s += "unknown"
	}
	var lc *corev1.PodCondition
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Message != "" && (lc == nil || !c.LastTransitionTime.Before(&lc.LastTransitionTime)) {
			lc = c
		}
	}
	if lc != nil {
		s += fmt.Sprintf(", %s=%s %s: %s", lc.Type, lc.Status, lc.Reason, oneLine(lc.Message))
	}
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			s += fmt.Sprintf(", container %s waiting: %s", c.Name, w.Reason)
			if w.Message != "" {
				s += ": " + oneLine(w.Message)
			}
		}
	}
	return s
}

// oneLine joins the lines of s.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// DeletePod deletes a pod of a run at once (no grace period: its process
// holds nothing) and waits, bounded by timeout, until it is gone.
func DeletePod(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) error {
	zero := int64(0)
	pods := cs.CoreV1().Pods(ns)
	err := Call(ctx, "delete pod "+ns+"/"+name, func(ctx context.Context) error {
		return pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		// Any error but NotFound (a passing one included) is "not yet".
		_, err := Once(ctx, "get pod "+ns+"/"+name, func(ctx context.Context) error {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return err
		})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s still there %s after its deletion: %w", ns, name, timeout, err)
	}
	return nil
}
