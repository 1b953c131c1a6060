package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/preflight"
)

// Access is what a Kubernetes deployment gives a scenario
// (ClusterAccess): its API clients, the run's namespace and labels, the
// client pod, two server pods and a way to run cnibench's agent in them.
type Access struct {
	Clientset kubernetes.Interface
	// Dynamic reaches the CNIs' own resources (nil if it could not be
	// made); Discovery says which the cluster serves.
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Namespace and RunID of the run; Labels go on every namespaced object
	// a scenario creates (the run's clean-up finds them), ClusterLabels on
	// every cluster-scoped one.
	Namespace, RunID      string
	Labels, ClusterLabels map[string]string
	// Client is the client pod (where the cells' clients run) and
	// ClientLabels select it alone; ClientNode is its node.
	Client       backend.Place
	ClientLabels map[string]string
	ClientNode   string
	// Allowed is the cross-node server pod (the cells' server), Other the
	// server pod on the client's node (a second real destination, e.g. the
	// one an egress deny covers).
	Allowed, Other ServerPod
	// Agent runs `cnibench k8s agent ARGS` at place, with stdin, copying
	// its output as it comes.
	Agent func(ctx context.Context, place backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error
	// CNIUsage runs fn and measures the CNI's pods' CPU and memory
	// meanwhile (metrics "cni_cpu_millicores", "cni_memory_bytes",
	// "cni_usage_window_seconds"); why says what it left out or why it
	// measured nothing, err is fn's.
	CNIUsage func(ctx context.Context, fn func(context.Context) error) (usage map[string]float64, why string, err error)
	// NewClientPod starts a further client pod on the client's node (named
	// by short, idle, with caps added to its container: a point that must
	// change the pod's own network namespace gets NET_ADMIN and BPF for
	// that point only) and returns where to run in it and how to remove it
	// (waiting until it is gone).
	NewClientPod func(ctx context.Context, short string, caps []string) (backend.Place, func(context.Context) error, error)

	// --- Services at scale (issue 36; serviceproxy.go) ---
	// ServiceProxy names what serves ClusterIP services (cni.ServiceProxy:
	// kube-proxy-iptables, kube-proxy-nftables, cilium-kpr, calico-ebpf,
	// none, unknown), ServiceProxyEvidence why.
	ServiceProxy         string
	ServiceProxyEvidence []string
	// ProxyUsage is CNIUsage for kube-proxy (its pods, or its cgroup when
	// it runs outside pods) on the two nodes: metrics ProxyCPU,
	// ProxyMemory, ProxyWindow; nil usage and why when no kube-proxy runs
	// there or it could not be read.
	ProxyUsage func(ctx context.Context, fn func(context.Context) error) (usage map[string]float64, why string, err error)
	// APIQPS and APIBurst are the clientset's API rate limit (0: unknown).
	APIQPS   float64
	APIBurst int
	// --- end of services at scale ---

	// --- the CNI's own account of a point (logs.go) ---

	// CNILogs opens a window over the CNI's pods at a point's start: its
	// Evidence says which of their containers restarted since and the
	// warning and error lines they logged, bounded (a failed point's
	// evidence). Nil where the deployment cannot read them.
	CNILogs func(ctx context.Context) *CNILogWindow
}

// ServerPod is a server pod of a cluster run.
type ServerPod struct {
	Name, IP string
	// Port is its `cnibench serve` control port, ServicePort its
	// session-less listener (service mode), HTTPPort its http server (0 if
	// none).
	Port, ServicePort, HTTPPort int
	// Labels select it alone.
	Labels map[string]string
}

// SetDynamic sets the dynamic client scenarios reach the CNIs' own
// resources with (tests use a fake).
func (b *Backend) SetDynamic(dyn dynamic.Interface) { b.dyn = dyn }

// ClusterAccess gives a scenario the run's pods and API clients (a
// scenario asks for it with scenario.Access and an interface of its own). Scenarios run on the pod network only: the
// host network has no pods to select or serve.
func (d *Deployment) ClusterAccess(datapath string) (*Access, error) {
	if datapath != d.cniName() {
		return nil, fmt.Errorf("%w: %s is the host network, which has no pods for a scenario's policies or services (it runs on %s)",
			backend.ErrNotSupported, datapath, d.cniName())
	}
	srvA, srvB := d.pods[podSrvA], d.pods[podSrvB]
	if srvA == nil || srvB == nil || d.pods[podCliA] == nil {
		return nil, errors.New("kubernetes: the run's pods are not up")
	}
	a := &Access{
		Clientset: d.b.cs, Dynamic: d.b.dyn, Discovery: d.b.cs.Discovery(),
		Namespace: d.ns, RunID: d.runID,
		Labels:        kube.RunLabels(d.runID),
		ClusterLabels: kube.ClusterObjectLabels(d.ns, d.runID),
		Client:        place{d.ns, d.name(podCliA)}, ClientLabels: d.podLabels(podCliA), ClientNode: d.client.Name,
		Allowed: ServerPod{Name: srvB.Name, IP: srvB.Status.PodIP, Port: engine.DefaultPort, ServicePort: servicePort,
			HTTPPort: httpPort, Labels: d.podLabels(podSrvB)},
		Other: ServerPod{Name: srvA.Name, IP: srvA.Status.PodIP, Port: engine.DefaultPort, Labels: d.podLabels(podSrvA)},
		Agent: func(ctx context.Context, pl backend.Place, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			p, ok := pl.(place)
			if !ok {
				return fmt.Errorf("kubernetes: cannot run the agent at %v", pl)
			}
			return d.b.exec.Exec(ctx, p.ns, p.pod, kube.ContainerName, append([]string{"/cnibench", "k8s", "agent"}, args...), stdin, stdout, stderr)
		},
		CNIUsage:     d.cniUsage,
		NewClientPod: d.newClientPod,
		CNILogs:      d.cniLogs,
	}
	d.serviceScaleAccess(a)
	return a, nil
}

// cniUsage runs fn and reads the CNI's pods' cgroups on the two nodes
// before and after it: their CPU over fn's run (millicores, summed) and
// their memory working set after it (bytes, summed). why names what was
// left out (pods on other nodes, unreadable ones) or why nothing was read.
func (d *Deployment) cniUsage(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
	pods := d.cni.Pods
	byHelper, other := d.podsByHost(pods)
	var left []string
	for _, p := range other {
		left = append(left, p.Namespace+"/"+p.Name+" (node "+p.Node+")")
	}
	if len(byHelper) == 0 {
		why := "the CNI runs no pods on the run's nodes"
		if len(pods) == 0 {
			why = "the CNI runs no pods (its plugins run once per pod sandbox)"
		}
		return nil, why, fn(ctx)
	}
	first, second, el, why, err := d.readAround(ctx, "the CNI's", uidTargets(byHelper), fn)
	if why != "" {
		return nil, why, err
	}
	cpu, mem, _, unread := sumUsage(first, second)
	left = append(left, unread...)
	m := map[string]float64{"cni_cpu_millicores": cpu, "cni_memory_bytes": mem, "cni_usage_window_seconds": el.Seconds()}
	if len(left) > 0 {
		why = "left out: " + strings.Join(left, ", ")
	}
	return m, why, err
}

// newClientPod starts a client pod like the run's own on the client node,
// with caps added, labelled as the run's (the run's clean-up removes it
// too).
func (d *Deployment) newClientPod(ctx context.Context, short string, caps []string) (backend.Place, func(context.Context) error, error) {
	secret := ""
	if p := d.pods[podCliA]; p != nil {
		for _, e := range p.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				secret = e.ValueFrom.SecretKeyRef.Name
			}
		}
	}
	spec := kube.PodSpec{Name: d.name(short), Role: "client", Node: d.client.Name, Args: []string{"k8s", "agent", "idle"},
		Image: d.b.o.Image, ImagePullPolicy: d.b.o.PullPolicy, TokenSecret: secret,
		Labels: map[string]string{"cnibench.io/pod": short}}
	for _, c := range caps {
		spec.Capabilities = append(spec.Capabilities, corev1.Capability(c))
	}
	pod, err := kube.StartPod(ctx, d.b.cs, kube.BuildPod(d.ns, d.runID, spec), d.b.o.PodTimeout)
	remove := func(ctx context.Context) error {
		return kube.DeletePod(ctx, d.b.cs, d.ns, spec.Name, d.b.o.PodTimeout)
	}
	if err != nil {
		return nil, nil, errors.Join(err, remove(context.WithoutCancel(ctx)))
	}
	return place{d.ns, pod.Name}, remove, nil
}

// ErrRefused is wrapped by the error of a scenario's point whose API
// objects the cluster refuses (its admission webhooks or policies, Pod Security,
// RBAC, a quota), found by a dry run before anything was created or
// measured (Admit): recorded "skipped: <reason>; <fix>".
// It wraps backend.ErrNotSupported without saying so in its text.
var ErrRefused error = refusedError{}

type refusedError struct{}

func (refusedError) Error() string { return "refused by this cluster" }
func (refusedError) Unwrap() error { return backend.ErrNotSupported }

// Admit dry-runs the objects a scenario's point is about to create
// (preflight.Check: every admission plugin and webhook runs, nothing is
// persisted) and returns an error wrapping ErrRefused for the first one
// refused, with the refusal's reason and fix on one line; nil when all are
// admitted or could not be checked (the create itself then reports what it
// meets). A point calls it before its first create, so that a cluster
// whose admission refuses a scenario's objects skips the point at once,
// with the reason, instead of failing it half-way with the objects'
// remains to remove.
func Admit(ctx context.Context, cs kubernetes.Interface, objs []preflight.Object) error {
	if cs == nil || len(objs) == 0 {
		return nil
	}
	rep := preflight.Check(ctx, cs, objs)
	for _, r := range rep.Objects {
		if r.Verdict != preflight.Refused {
			continue
		}
		msg := r.Reason
		if msg == "" {
			msg = r.Detail
		}
		if r.Why != "" {
			msg = r.Why + ": " + msg
		}
		if r.Fix != "" {
			msg += "; fix: " + r.Fix
		}
		return fmt.Errorf("%w: %s %s: %s", ErrRefused, r.Kind, r.Name, msg)
	}
	return nil
}
