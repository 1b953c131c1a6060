package suitecmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/nodes"
)

// Backends are the accepted --backend values.
var Backends = []string{"lab", cluster.Name}

// kubeFlags are the Kubernetes backend's flags.
type kubeFlags struct {
	Backend         string
	Kubeconfig      string
	Context         string
	Namespace       string
	Image           string
	PullPolicy      string
	ClientNode      string
	ServerNode      string
	HostPort        int
	CNIConfDir      string
	CNIPods         string
	Checks          string
	ClusterName     string
	FootprintWindow time.Duration
	ClusterScale    bool
	Placement       string
	Tolerations     string
	NodeArch        string
	Pairs           int
	PodResources    string
	PullSecrets     []string
	ServiceAccount  string
	LoadBalancer    bool
	LBExternal      bool
	LBTimeout       time.Duration
	NoHostPods      bool
	IPFamily        string
	APITimeout      time.Duration
	// Services at scale (issue 36).
	APIQPS          float64
	APIBurst        int
	KubeProxyCgroup string
}

// kubeOnly are the flags that apply to --backend kubernetes only.
var kubeOnly = []string{"kubeconfig", "context", "namespace", "image", "image-pull-policy", "client-node", "server-node", "host-port",
	"cni-conf-dir", "cni-pods", "checks", "cluster-name", "footprint-window", "cluster-scale", "placement", "tolerations", "node-arch",
	"pairs", "pod-resources", "image-pull-secret", "service-account", "load-balancer", "load-balancer-external", "load-balancer-timeout", "no-host-pods", "ip-family", "api-timeout",
	"api-qps", "api-burst", "kube-proxy-cgroup"}

func (k *kubeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.Backend, "backend", "lab", "where to run: lab (the local namespace lab, needs root) or kubernetes (pods of a real cluster, through its CNI; see docs/kubernetes.md)")
	fl.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubernetes: kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&k.Context, "context", "", "kubernetes: kubeconfig context (default: the current one)")
	fl.StringVar(&k.Namespace, "namespace", cluster.DefaultNamespace, "kubernetes: namespace of the run's pods; created and removed by the run if absent")
	fl.StringVar(&k.Image, "image", "", "kubernetes: image of the cnibench binary (default cnibench.local/cnibench:<version>-<commit> of this binary; build it with 'cnibench image build')")
	fl.StringVar(&k.PullPolicy, "image-pull-policy", string(corev1.PullIfNotPresent), "kubernetes: Always, IfNotPresent or Never (Never for images imported on the nodes)")
	fl.StringVar(&k.ClientNode, "client-node", "", "kubernetes: the client node, by name or LABEL=VALUE (default: the first schedulable worker by name)")
	fl.StringVar(&k.ServerNode, "server-node", "", "kubernetes: the server node, by name or LABEL=VALUE (default: the next one)")
	fl.IntVar(&k.HostPort, "host-port", cluster.DefaultHostPort, "kubernetes: port of the node-to-node (hostNetwork) server on the server node")
	fl.StringVar(&k.CNIConfDir, "cni-conf-dir", cluster.DefaultCNIConfDir, "kubernetes: the nodes' CNI configuration directory ({node} is replaced by the node's name)")
	fl.StringVar(&k.CNIPods, "cni-pods", "", "kubernetes: the CNI's pods as NAMESPACE/LABEL=VALUE (default: identified among the kube-system pods)")
	fl.StringVar(&k.Checks, "checks", "", "kubernetes: comma-separated checks (default: all: "+strings.Join(cluster.Checks, ",")+"; none: no check)")
	fl.StringVar(&k.ClusterName, "cluster-name", "", "kubernetes: the cluster's name in the results (default: the kubeconfig context's cluster)")
	fl.DurationVar(&k.FootprintWindow, "footprint-window", cluster.DefaultFootprintWindow, "kubernetes: length of each CNI footprint sample (idle, under load)")
	fl.StringVar(&k.Placement, "placement", string(nodes.ZoneSame), "kubernetes: where client and server nodes may be: same-zone (topology.kubernetes.io/zone; nodes without it count as one zone), cross-zone or any")
	fl.StringVar(&k.Tolerations, "tolerations", "", "kubernetes: taints the pods tolerate, so that tainted (dedicated) nodes can be used: key[=value][:Effect],… (e.g. dedicated=bench:NoSchedule)")
	fl.StringVar(&k.NodeArch, "node-arch", "", "kubernetes: node architectures (kubernetes.io/arch) the image runs on, comma-separated; other nodes are not used (default: the image's platforms, read from its registry; else this cnibench's architecture, with a warning)")
	fl.IntVar(&k.Pairs, "pairs", 1, "kubernetes: client/server pairs measured at once on the cross-node-pairs path (aggregate and spread per pair; 1: no such path)")
	fl.StringVar(&k.PodResources, "pod-resources", string(cluster.ResourcesAuto), "kubernetes: the pods' requests and limits: auto (Guaranteed, the same CPU share for every pod, sized to the nodes' allocatable CPU, at most 2 CPUs), none (BestEffort), cpu=Q,memory=Q (Guaranteed), or cpu=Q,memory=Q,requests-only (Burstable: no cap)")
	fl.StringSliceVar(&k.PullSecrets, "image-pull-secret", nil, "kubernetes: secret(s) of the namespace to pull --image with (kubectl create secret docker-registry …); repeatable")
	fl.StringVar(&k.ServiceAccount, "service-account", "", "kubernetes: service account of the pods (default: the namespace's default; its token is never mounted)")
	fl.BoolVar(&k.LoadBalancer, "load-balancer", false, "kubernetes: add the pod-to-loadbalancer path through a LoadBalancer service (on a cloud this provisions a billed load balancer)")
	fl.BoolVar(&k.LBExternal, "load-balancer-external", false, "kubernetes: with --load-balancer, also measure the service's address from this machine, outside the cluster (the external-to-loadbalancer path: the client runs here, not in a pod; this machine must reach the address)")
	fl.DurationVar(&k.LBTimeout, "load-balancer-timeout", cluster.DefaultLBTimeout, "kubernetes: how long to wait for the LoadBalancer service's address")
	fl.StringVar(&k.IPFamily, "ip-family", cluster.FamilyIPv4, "kubernetes: the IP families to measure the pod network over: ipv4, ipv6, or dual (every pod path twice, the IPv6 ones named …-ipv6; services RequireDualStack)")
	fl.BoolVar(&k.NoHostPods, "no-host-pods", false, "kubernetes: do not deploy the privileged hostNetwork pods (no node-to-node baseline; the mtu, encryption and cni_footprint checks are skipped); without it, pods the namespace's admission refuses are left out the same way, with the reason")
	fl.DurationVar(&k.APITimeout, "api-timeout", kube.DefaultAPITimeout, "kubernetes: how long to wait for the API server to answer at all before giving up (the run's own calls are bounded and retried on their own)")
	fl.Float64Var(&k.APIQPS, "api-qps", 50, "kubernetes: the client's API rate limit in requests/s (a scenario's thousands of objects are created at it; raise it where the API server takes more)")
	fl.IntVar(&k.APIBurst, "api-burst", 100, "kubernetes: the client's API burst above --api-qps")
	fl.StringVar(&k.KubeProxyCgroup, "kube-proxy-cgroup", cluster.DefaultKubeProxyCgroup, "kubernetes: kube-proxy's cgroup below each cgroup hierarchy when it runs outside pods, for its CPU and memory ({node} is replaced by the node's name)")
	fl.BoolVar(&k.ClusterScale, "cluster-scale", false, "kubernetes: the cluster may take a scenario's thousands of objects (services above 1000 per point, deny sets above 10000 rules; see docs/kubernetes.md)")
}

// kubernetes reports whether the Kubernetes backend is selected, and
// rejects the Kubernetes flags with the lab.
func (k *kubeFlags) kubernetes(cmd *cobra.Command) (bool, error) {
	switch k.Backend {
	case "lab":
		for _, n := range kubeOnly {
			if cmd.Flags().Changed(n) {
				return false, clierr.Usagef("--%s: applies to --backend kubernetes only", n)
			}
		}
		return false, nil
	case cluster.Name:
		return true, nil
	}
	return false, clierr.Usagef("--backend %q: must be one of %s", k.Backend, strings.Join(Backends, ", "))
}

// options turns the flags into the backend's options.
func (k *kubeFlags) options() (cluster.Options, error) {
	o := cluster.Options{
		Kubeconfig: k.Kubeconfig, Context: k.Context, Namespace: k.Namespace, Image: k.Image,
		Nodes: nodes.Choice{Client: k.ClientNode, Server: k.ServerNode}, HostPort: k.HostPort,
		CNIConfDir: k.CNIConfDir, CNIPods: k.CNIPods,
	}
	switch p := corev1.PullPolicy(k.PullPolicy); p {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		o.PullPolicy = p
	default:
		return o, clierr.Usagef("--image-pull-policy %q: must be Always, IfNotPresent or Never", k.PullPolicy)
	}
	if k.Checks != "" {
		cs, err := splitList("checks", k.Checks)
		if err != nil {
			return o, err
		}
		o.Checks = cs
	}
	o.FootprintWindow = k.FootprintWindow
	var err error
	if o.Placement.Zone, err = nodes.ParsePlacement(k.Placement); err != nil {
		return o, clierr.Usagef("%v", err)
	}
	if o.Placement.Tolerations, err = nodes.ParseTolerations(k.Tolerations); err != nil {
		return o, clierr.Usagef("%v", err)
	}
	if k.NodeArch != "" {
		arches, err := splitList("node-arch", k.NodeArch)
		if err != nil {
			return o, err
		}
		o.Placement.Arches = arches
	}
	if k.Pairs < 1 {
		return o, clierr.Usagef("--pairs %d: must be at least 1", k.Pairs)
	}
	o.Pairs = k.Pairs
	if o.ResourcesMode, o.Resources, err = cluster.ParseResources(k.PodResources); err != nil {
		return o, clierr.Usagef("%v", err)
	}
	o.ImagePullSecrets, o.ServiceAccount = k.PullSecrets, k.ServiceAccount
	o.LoadBalancer = k.LoadBalancer
	if k.LBExternal && !k.LoadBalancer {
		return o, clierr.Usagef("--load-balancer-external: it measures the LoadBalancer service's address; add --load-balancer")
	}
	o.LBExternal = k.LBExternal
	if k.LBTimeout <= 0 {
		return o, clierr.Usagef("--load-balancer-timeout %s: must be positive", k.LBTimeout)
	}
	o.LBTimeout = k.LBTimeout
	o.NoHostPods = k.NoHostPods
	o.IPFamily = k.IPFamily
	if k.APIQPS <= 0 || k.APIBurst <= 0 {
		return o, clierr.Usagef("--api-qps %g, --api-burst %d: must be positive (default 50 and 100)", k.APIQPS, k.APIBurst)
	}
	o.APIQPS, o.APIBurst, o.KubeProxyCgroup = k.APIQPS, k.APIBurst, k.KubeProxyCgroup
	if err := o.Validate(); err != nil {
		return o, clierr.Usagef("%v", err)
	}
	return o, nil
}

// newBackend connects to the cluster.
func (k *kubeFlags) newBackend(o cluster.Options) (*cluster.Backend, error) {
	if k.APITimeout <= 0 {
		return nil, clierr.Usagef("--api-timeout %v: must be positive (default %v)", k.APITimeout, kube.DefaultAPITimeout)
	}
	b, err := cluster.New(o)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	b.SetCluster(k.ClusterName)
	return b, nil
}

// namedBackend stands for a backend in validation, before it exists.
type namedBackend string

func (n namedBackend) Name() string { return string(n) }

func (n namedBackend) Config() map[string]string { return nil }

func (n namedBackend) Up(context.Context, backend.Spec) (backend.Deployment, error) {
	return nil, fmt.Errorf("%s: not connected", string(n))
}
