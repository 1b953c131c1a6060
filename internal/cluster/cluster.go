// Package cluster is the Kubernetes backend of the suite: it runs the
// cnibench binary in pods of a real cluster, through the cluster's own
// CNI, and implements backend.Backend, so that the suite's matrix, results
// and reports are the lab's.
//
// One run deploys, in one namespace and labelled with the run's ID:
//
//	srv-a   pod network, client node   cnibench serve            (same-node server)
//	srv-b   pod network, server node   cnibench serve            (cross-node, service and hairpin server)
//	cli-a   pod network, client node   cnibench k8s agent idle   (the pods' client)
//	host-a  host network, client node  cnibench k8s agent idle   (node-to-node client; privileged helper)
//	host-b  host network, server node  cnibench serve            (node-to-node server; privileged helper)
//	svc     NodePort service (so with a ClusterIP too) selecting srv-b
//
// Clients run by exec into cli-a (host-a for the node-to-node baseline,
// srv-b itself for the hairpin); behind the service they use the engine's
// session-less service mode, like `kubectl exec`; their JSON result
// comes back on stdout. The privileged host pods also read the nodes' CNI
// configuration and cgroups and capture on the nodes' interfaces for the
// checks (checks.go).
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/image"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/internal/kube/nodes"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// Name is the backend's name (the results' "backend" label).
const Name = "kubernetes"

// Checks lists the checks Findings can run.
var Checks = []string{"cni", "mtu", "network_policy", "encryption", "cni_footprint"}

// Options configure the Kubernetes backend.
type Options struct {
	Kubeconfig string // "" : $KUBECONFIG, then ~/.kube/config
	Context    string // "" : the current context
	// Namespace is where everything runs; created (and removed at the
	// end) if absent.
	Namespace string
	// Image is the cnibench image every pod runs (image.DefaultRef() if
	// empty), PullPolicy its pull policy ("" : IfNotPresent).
	Image      string
	PullPolicy corev1.PullPolicy
	// Nodes selects the client and server nodes (automatic if empty).
	Nodes nodes.Choice
	// Placement restricts the nodes: zones (same zone by default), OS and
	// architecture (Arches empty: the image's platforms, read from its
	// registry, else this binary's architecture; see nodeArches), and the
	// taints the pods tolerate.
	Placement nodes.Placement
	// Pairs is the number of client/server pairs of the cross-node-pairs
	// path (1: no such path).
	Pairs int
	// ResourcesMode chooses the pods' requests and limits: auto
	// (Guaranteed, sized to the nodes; the default), none (BestEffort)
	// or given (Resources).
	ResourcesMode ResourcesMode
	Resources     corev1.ResourceRequirements
	// ImagePullSecrets name secrets of the namespace the pods pull the
	// image with; ServiceAccount is the pods' service account ("" : the
	// namespace's default; its token is never mounted).
	ImagePullSecrets []string
	ServiceAccount   string
	// LoadBalancer adds the pod-to-loadbalancer path: a LoadBalancer
	// service, measured once the cluster gives it an address (waited
	// for at most LBTimeout).
	LoadBalancer bool
	LBTimeout    time.Duration
	// LBExternal (with LoadBalancer) adds the external-to-loadbalancer
	// path: the client is a `cnibench run` on the machine cnibench runs
	// on, outside the cluster, to the service's address (north-south).
	LBExternal bool
	// NoHostPods runs without the privileged hostNetwork pods (for a
	// namespace whose policy refuses them): no node-to-node baseline, and
	// the checks that read the nodes are skipped.
	NoHostPods bool
	// IPFamily is the pod network's IP families to measure: ipv4 (""),
	// ipv6 or dual.
	IPFamily string
	// HostPort is the node-to-node server's port on the server node.
	HostPort int
	// CNIConfDir is the nodes' CNI configuration directory; "{node}" in
	// it is replaced by the node's name (for clusters whose nodes share a
	// host, like hack/local-cluster).
	CNIConfDir string
	// CNIPods overrides the CNI's pods: "NAMESPACE/LABEL=VALUE".
	CNIPods string
	// Checks selects the checks (empty: all of Checks; "none": none).
	Checks []string
	// FootprintWindow is each footprint sample's length.
	FootprintWindow time.Duration
	// PodTimeout bounds the wait for each pod and the service.
	PodTimeout time.Duration
	Logger     *slog.Logger

	// Services at scale (issue 36).
	// APIQPS and APIBurst are the client's API rate limit (requests per
	// second, and its burst): 0 keeps kube.LoadConfig's (50, 100).
	APIQPS   float64
	APIBurst int
	// KubeProxyCgroup is kube-proxy's cgroup below each hierarchy when it
	// runs outside pods ({node}: the node's name; "":
	// DefaultKubeProxyCgroup).
	KubeProxyCgroup string
}

// maxPairs bounds --pairs: each pair is two pods.
const maxPairs = 64

// Defaults.
const (
	DefaultNamespace       = "cnibench"
	DefaultHostPort        = 15201
	DefaultCNIConfDir      = "/etc/cni/net.d"
	DefaultFootprintWindow = 10 * time.Second
	DefaultPodTimeout      = 2 * time.Minute
	DefaultLBTimeout       = 3 * time.Minute
)

// Backend is a Kubernetes cluster as a backend.Backend.
type Backend struct {
	o       Options
	cs      kubernetes.Interface
	exec    kube.Execer
	metrics metricsclient.Interface // nil: no metrics.k8s.io client
	dyn     dynamic.Interface       // nil: none (scenarios skip the CNIs' own resources)
	cluster string
	// clusterSet: the user named the cluster (SetCluster).
	clusterSet bool
	// kubeconfigCluster and apiHost name the cluster when the user does
	// not (identify).
	kubeconfigCluster, apiHost string
	// The cluster's facts, read once (identify).
	identOnce     sync.Once
	facts         cni.Facts
	factsEvidence []string
	// archOnce settles Options.Placement.Arches (nodeArches).
	archOnce sync.Once
	// qps and burst are the clientset's API rate limit (0: unknown, a
	// test's clientset).
	qps   float64
	burst int
}

// New connects to the cluster of o's kubeconfig and context.
func New(o Options) (*Backend, error) {
	cfg, err := kube.LoadConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	if o.APIQPS > 0 {
		cfg.QPS = float32(o.APIQPS)
	}
	if o.APIBurst > 0 {
		cfg.Burst = o.APIBurst
	}
	cs, err := kube.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	b := NewWithClient(o, cs, kube.NewExecer(cfg, cs))
	b.qps, b.burst = float64(cfg.QPS), cfg.Burst
	b.kubeconfigCluster, b.apiHost = kube.ClusterName(o.Kubeconfig, o.Context), cfg.Host
	if mc, err := kube.NewMetricsClient(cfg); err == nil {
		b.metrics = mc
	}
	if dyn, err := kube.NewDynamicClient(cfg); err == nil {
		b.dyn = dyn
	}
	return b, nil
}

// Reachable waits, at most timeout, until the API server answers
// (kube.Reachable), naming the server and the kubeconfig if it does not.
func (b *Backend) Reachable(ctx context.Context, timeout time.Duration) error {
	return kube.Reachable(ctx, b.cs, b.apiHost, kube.KubeconfigSource(b.o.Kubeconfig), timeout)
}

// SetMetrics sets the metrics.k8s.io client (tests use a fake).
func (b *Backend) SetMetrics(mc metricsclient.Interface) { b.metrics = mc }

// NewWithClient is New with a given client and executor (tests use the
// fake clientset).
func NewWithClient(o Options, cs kubernetes.Interface, ex kube.Execer) *Backend {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = image.DefaultRef()
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullIfNotPresent
	}
	if o.HostPort == 0 {
		o.HostPort = DefaultHostPort
	}
	if o.CNIConfDir == "" {
		o.CNIConfDir = DefaultCNIConfDir
	}
	if o.FootprintWindow == 0 {
		o.FootprintWindow = DefaultFootprintWindow
	}
	if o.PodTimeout == 0 {
		o.PodTimeout = DefaultPodTimeout
	}
	if o.Pairs == 0 {
		o.Pairs = 1
	}
	if o.LBTimeout == 0 {
		o.LBTimeout = DefaultLBTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Backend{o: o, cs: cs, exec: ex, cluster: "unknown"}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return Name }

// Config is the backend's part of the results' config: where the run's
// pods went and what was checked (the image is in each run's labels).
func (b *Backend) Config() map[string]string {
	checks := strings.Join(b.o.Checks, ",")
	if checks == "" {
		checks = strings.Join(Checks, ",")
	}
	return map[string]string{
		"namespace": b.o.Namespace,
		"checks":    checks,
	}
}

// SetCluster names the cluster in the results (default: the kubeconfig
// context's cluster).
func (b *Backend) SetCluster(name string) {
	if name != "" {
		b.cluster, b.clusterSet = name, true
	}
}

// Validate checks the options; errors name the flag.
func (o Options) Validate() error {
	for _, c := range o.Checks {
		if c == "none" && len(o.Checks) == 1 {
			continue
		}
		if !slices.Contains(Checks, c) {
			return fmt.Errorf("--checks %s: unknown check (known: %s, or none)", c, strings.Join(Checks, ", "))
		}
	}
	if o.HostPort < 1 || o.HostPort > 65535 || o.HostPort == engine.DefaultPort {
		return fmt.Errorf("--host-port %d: must be a free port between 1 and 65535 other than %d", o.HostPort, engine.DefaultPort)
	}
	if o.CNIPods != "" {
		if ns, sel, ok := strings.Cut(o.CNIPods, "/"); !ok || ns == "" || !strings.Contains(sel, "=") {
			return fmt.Errorf("--cni-pods %q: must be NAMESPACE/LABEL=VALUE, e.g. kube-system/k8s-app=cilium", o.CNIPods)
		}
	}
	if o.Pairs < 0 || o.Pairs > maxPairs {
		return fmt.Errorf("--pairs %d: must be between 1 and %d", o.Pairs, maxPairs)
	}
	if err := validFamily(o.IPFamily); err != nil {
		return err
	}
	if o.ServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(o.ServiceAccount); len(errs) > 0 {
			return fmt.Errorf("--service-account %q: not a valid name: %s", o.ServiceAccount, errs[0])
		}
	}
	for _, s := range o.ImagePullSecrets {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return fmt.Errorf("--image-pull-secret %q: not a valid secret name: %s", s, errs[0])
		}
	}
	if o.FootprintWindow < 0 {
		return fmt.Errorf("--footprint-window %s: must not be negative", o.FootprintWindow)
	}
	if err := validAPIRate(o.APIQPS, o.APIBurst); err != nil {
		return err
	}
	return validKubeProxyCgroup(o.KubeProxyCgroup)
}

// newRunID returns a short random ID labelling one run's objects.
func newRunID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw a run ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Up implements backend.Backend: it deploys the run's pods and service
// and returns once every server listens.
func (b *Backend) Up(ctx context.Context, spec backend.Spec) (backend.Deployment, error) {
	id, err := newRunID()
	if err != nil {
		return nil, err
	}
	d := &Deployment{b: b, runID: id, ns: b.o.Namespace, log: b.o.Logger.With("run", id),
		labelServiceProxy: spec.Scenario != nil && spec.Scenario.ServiceProxy}
	// The kube package's calls log to the run's logger.
	if err := d.up(d.kctx(ctx), spec); err != nil {
		return d, err
	}
	return d, nil
}
