package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/internal/kube/nodes"
)

// Pod names of a run (prefixed with the run's ID).
const (
	podSrvA  = "srv-a"
	podSrvB  = "srv-b"
	podCliA  = "cli-a"
	podHostA = "host-a"
	podHostB = "host-b"
	svcName  = "svc"
	lbName   = "lb"
)

// hostCgroupRoot is where the privileged host pods see the node's cgroups.
const hostCgroupRoot = "/host/sys/fs/cgroup"

// hostCNIConf is where they see the node's CNI configuration.
const hostCNIConf = "/host/cni/net.d"

// place is a container where a client runs.
type place struct{ ns, pod string }

func (p place) String() string { return p.ns + "/" + p.pod }

// Deployment is one run's objects on the cluster (backend.Deployment).
type Deployment struct {
	b     *Backend
	runID string
	ns    string
	log   *slog.Logger

	createdNS bool
	client    *corev1.Node
	server    *corev1.Node
	// pairs are the node pairs of --pairs (pairs[0] is client→server).
	pairs []nodes.Pair
	// noHost is why the privileged host pods do not run ("" if they do):
	// the baseline and the checks that need them are skipped with it.
	noHost string
	// lbAddr is the LoadBalancer service's address (--load-balancer);
	// lbWhy why the path cannot run ("" if it can).
	lbAddr string
	lbWhy  string
	// token is the run's shared secret (a local client's environment
	// carries it: localExecer).
	token string
	// proxyMode is kube-proxy's mode as the client node's kube-proxy
	// answers it ("" if it did not), and what was asked.
	proxyMode         string
	proxyModeEvidence []string
	labelServiceProxy bool // the scenario asked for LabelServiceProxy
	// resConfig describes the pods' resources (pod_cpu, pod_memory,
	// pod_qos) in the runs' config.
	resConfig map[string]string
	pods      map[string]*corev1.Pod // by short name
	svc       *corev1.Service
	// svcType is the type of the service to create (NodePort, unless the
	// preflight found NodePorts refused); nodePortWhy is why the service
	// has no NodePorts ("" if it has).
	svcType     corev1.ServiceType
	nodePortWhy string
	// noPolicy is why the network_policy check cannot run ("" if it
	// can): the cluster refuses its NetworkPolicies.
	noPolicy string
	// noMetrics is why metrics.k8s.io cannot be read ("" if it can),
	// asked once (metricsOnce).
	metricsOnce sync.Once
	noMetrics   string
	// prof caches CanProfile's answer (profile.go).
	prof     profState
	paths    []backend.Path
	baseline []backend.Path

	// Facts gathered at Up, used by paths and checks.
	cni      cni.Info
	conf     *agent.CNIConf
	podIf    *agent.Inspect // cli-a's network namespace
	nodeIf   *agent.Inspect // host-a's (the client node's)
	nodeIfB  *agent.Inspect // host-b's (the server node's)
	upErrors []string
}

// name is the object name of a short pod name in this run.
func (d *Deployment) name(short string) string { return "cnibench-" + d.runID + "-" + short }

func (d *Deployment) up(ctx context.Context, spec backend.Spec) error {
	b := d.b
	b.identify(ctx, d.log)
	b.nodeArches(ctx, d.log)
	pairs, err := nodes.SelectPairs(ctx, b.cs, b.o.Nodes, b.o.Placement, b.o.Pairs)
	if err != nil {
		return err
	}
	d.pairs = pairs
	client, server := pairs[0].Client, pairs[0].Server
	d.client, d.server = client, server
	d.log.Info("nodes", "client", client.Name, "server", server.Name, "client_zone", zoneLabel(client), "server_zone", zoneLabel(server))
	for _, p := range pairs {
		for _, n := range p.Notes {
			d.log.Info("placement", "note", n)
		}
	}
	fams := families(b.o.IPFamily)
	serverIP := nodeIPOf(server, fams[0])
	if serverIP == "" {
		return fmt.Errorf("node %s has no %s InternalIP for the node-to-node path (its addresses: %s); choose --ip-family to match the cluster", server.Name, fams[0], nodeAddrs(server))
	}
	// The preflight (admission.go): the namespace, dry-run and created
	// if the run makes it; then every other object dry-run in it before
	// any is created.
	if err := d.ensureNamespace(ctx); err != nil {
		return err
	}
	d.token = spec.Token
	secret := kube.TokenSecret(d.ns, d.runID, spec.Token)
	plans := d.podPlans(serverIP, secret.Name)
	if err := d.sizePods(plans); err != nil {
		return err
	}
	if plans, err = d.admit(ctx, plans, secret); err != nil {
		return err
	}
	if d.noHost != "" {
		// Fewer pods per node: resize the shares to the pods that run.
		if err := d.sizePods(plans); err != nil {
			return err
		}
	}
	if _, err := kube.CreateTokenSecret(ctx, b.cs, d.ns, d.runID, spec.Token); err != nil {
		return err
	}
	d.pods = map[string]*corev1.Pod{}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, pl := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := kube.StartPod(ctx, b.cs, pl.pod, b.o.PodTimeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			d.pods[pl.short] = p
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		// One line: the pods usually fail for one reason (the image).
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		if len(errs) == 1 {
			return errs[0]
		}
		return fmt.Errorf("%w (and %d more of the run's pods failed)", errs[0], len(errs)-1)
	}
	for _, f := range fams {
		for _, short := range slices.Sorted(maps.Keys(d.pods)) {
			if p := d.pods[short]; !p.Spec.HostNetwork && podIPOf(p, f) == "" {
				return fmt.Errorf("--ip-family %s: pod %s has no %s address (its addresses: %s): the cluster's pod network is not %s", b.o.IPFamily, short, f, podAddrs(p), f)
			}
		}
	}
	if err := d.createServices(ctx); err != nil {
		return err
	}
	d.gatherFacts(ctx)
	d.buildPaths(serverIP)
	return nil
}

// podPlan is one pod of the run: its short name, whether it is a
// privileged host pod (optional: refused by admission, it is skipped),
// and the pod.
type podPlan struct {
	short string
	host  bool
	pod   *corev1.Pod
}

// podPlans are the run's pods: the five of one pair, and a client and a
// server for each further pair of --pairs.
func (d *Deployment) podPlans(serverIP, secret string) []podPlan {
	b := d.b
	client, server := d.client, d.server
	port := strconv.Itoa(engine.DefaultPort)
	hostPaths := func(node string) []kube.HostPath {
		return []kube.HostPath{
			{HostPath: "/sys/fs/cgroup", MountPath: hostCgroupRoot, ReadOnly: true},
			{HostPath: strings.ReplaceAll(b.o.CNIConfDir, "{node}", node), MountPath: hostCNIConf, ReadOnly: true},
		}
	}
	type plan struct {
		short string
		spec  kube.PodSpec
	}
	plans := []plan{
		{podSrvA, kube.PodSpec{Role: "server", Node: client.Name, Args: []string{"serve", "--listen", ":" + port}, Ports: []int32{int32(engine.DefaultPort)}}},
		{podSrvB, kube.PodSpec{Role: "server", Node: server.Name,
			Args: []string{"serve", "--listen", ":" + port, "--http-listen", ":" + strconv.Itoa(httpPort),
				"--service-listen", fmt.Sprintf(":%d,:%d,:%d,:%d", servicePort, svcPort, hairpinPort, nodePortPort)},
			Ports:  []int32{int32(engine.DefaultPort), servicePort, svcPort, hairpinPort, nodePortPort, httpPort},
			Labels: map[string]string{"cnibench.io/service": d.runID}}},
		{podCliA, kube.PodSpec{Role: "client", Node: client.Name, Args: []string{"k8s", "agent", "idle"}}},
		{podHostA, kube.PodSpec{Role: "host-client", Node: client.Name, Args: []string{"k8s", "agent", "idle"},
			HostNetwork: true, Privileged: true, HostPaths: hostPaths(client.Name)}},
		{podHostB, kube.PodSpec{Role: "host-server", Node: server.Name, Args: []string{"serve", "--listen", net.JoinHostPort(serverIP, strconv.Itoa(b.o.HostPort))},
			HostNetwork: true, Privileged: true, HostPaths: hostPaths(server.Name)}},
	}
	for i, p := range d.pairs[1:] {
		plans = append(plans,
			plan{pairPod("cli", i+2), kube.PodSpec{Role: "client", Node: p.Client.Name, Args: []string{"k8s", "agent", "idle"}}},
			plan{pairPod("srv", i+2), kube.PodSpec{Role: "server", Node: p.Server.Name, Args: []string{"serve", "--listen", ":" + port}, Ports: []int32{int32(engine.DefaultPort)}}})
	}
	var out []podPlan
	for _, p := range plans {
		s := p.spec
		s.Name = d.name(p.short)
		s.Image, s.ImagePullPolicy, s.TokenSecret = b.o.Image, b.o.PullPolicy, secret
		s.Tolerations = b.o.Placement.Tolerations
		s.ImagePullSecrets, s.ServiceAccount = b.o.ImagePullSecrets, b.o.ServiceAccount
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["cnibench.io/pod"] = p.short
		out = append(out, podPlan{short: p.short, host: s.HostNetwork, pod: kube.BuildPod(d.ns, d.runID, s)})
	}
	return out
}

// sizePods gives plans' pods their resources (d.resources), sized to
// these pods: called again when admission left the host pods out.
func (d *Deployment) sizePods(plans []podPlan) error {
	podsOn := map[string]int{}
	for _, p := range plans {
		podsOn[p.pod.Spec.NodeName]++
	}
	res, conf, err := d.resources(podsOn)
	if err != nil {
		return err
	}
	d.resConfig = conf
	for _, p := range plans {
		for i := range p.pod.Spec.Containers {
			p.pod.Spec.Containers[i].Resources = *res.DeepCopy()
		}
	}
	return nil
}

// pairPod is the short name of pair n's client or server pod.
func pairPod(role string, n int) string { return fmt.Sprintf("%s-p%d", role, n) }

// createServices creates the run's service (NodePort, else ClusterIP:
// the type the preflight left, or the fallback when the cluster refuses
// the NodePort create all the same) and, with --load-balancer, its
// LoadBalancer service, and waits for the endpoint.
func (d *Deployment) createServices(ctx context.Context) error {
	b := d.b
	// A NodePort service has a ClusterIP too: one service serves both
	// paths. A cluster that refuses NodePorts gets a ClusterIP service
	// and the nodeport path is skipped with the reason.
	svc, err := kube.CreateBuiltService(ctx, b.cs, d.serviceObj(d.svcType))
	if err != nil && d.svcType == corev1.ServiceTypeNodePort {
		d.nodePortWhy = "the cluster refused a NodePort service: " + firstLine(err.Error())
		d.log.Warn("no NodePort service", "err", err)
		svc, err = kube.CreateBuiltService(ctx, b.cs, d.serviceObj(corev1.ServiceTypeClusterIP))
	}
	if err != nil {
		return err
	}
	d.svc = svc
	if err := kube.WaitEndpoints(ctx, b.cs, d.ns, svc.Name, 1, b.o.PodTimeout); err != nil {
		return err
	}
	d.loadBalancer(ctx)
	return nil
}

// gatherFacts inspects the pods' and nodes' interfaces and the CNI
// configuration, and identifies the CNI. What cannot be read is noted
// (the checks report it), not fatal.
func (d *Deployment) gatherFacts(ctx context.Context) {
	note := func(what string, err error) {
		d.upErrors = append(d.upErrors, fmt.Sprintf("%s: %v", what, err))
		d.log.Warn(what, "err", err)
	}
	var in agent.Inspect
	if err := d.agentJSON(ctx, podCliA, []string{"inspect"}, &in); err != nil {
		note("inspect the client pod's interfaces", err)
	} else {
		d.podIf = &in
	}
	if d.noHost != "" {
		d.upErrors = append(d.upErrors, "the nodes' interfaces and CNI configuration were not read: no host pods ("+d.noHost+")")
	} else {
		var na agent.Inspect
		if err := d.agentJSON(ctx, podHostA, []string{"inspect", "--addr", nodes.InternalIP(d.client)}, &na); err != nil {
			note("inspect the client node's interfaces", err)
		} else {
			d.nodeIf = &na
		}
		var nb agent.Inspect
		if err := d.agentJSON(ctx, podHostB, []string{"inspect", "--addr", nodes.InternalIP(d.server)}, &nb); err != nil {
			note("inspect the server node's interfaces", err)
		} else {
			d.nodeIfB = &nb
		}
		var pm agent.ProxyMode
		if err := d.agentJSON(ctx, podHostA, []string{"proxy-mode"}, &pm); err != nil {
			note("ask the client node's kube-proxy for its mode", err)
		} else if pm.Mode != "" {
			d.proxyMode = pm.Mode
			d.proxyModeEvidence = append(d.proxyModeEvidence, "kube-proxy on "+d.client.Name+" answers mode "+pm.Mode+" ("+agent.KubeProxyMetricsURL+")")
		} else {
			d.proxyModeEvidence = append(d.proxyModeEvidence, "no kube-proxy answered on "+d.client.Name+": "+pm.Error)
		}
		var conf agent.CNIConf
		if err := d.agentJSON(ctx, podHostA, []string{"cni-conf", "--dir", hostCNIConf}, &conf); err != nil {
			note("read the CNI configuration", err)
		} else {
			d.conf = &conf
		}
	}
	var pods []corev1.Pod
	if d.b.o.CNIPods != "" {
		p, err := cni.PodsBySelector(ctx, d.b.cs, d.b.o.CNIPods)
		if err != nil {
			note("list --cni-pods", err)
		}
		pods = p
	} else {
		p, err := cni.ListSystemPods(ctx, d.b.cs)
		if err != nil {
			note("list kube-system pods", err)
		}
		pods = p
	}
	var plugins []string
	if d.conf != nil {
		plugins = d.conf.PluginsInUse
	}
	d.cni = cni.Identify(pods, plugins)
	if d.b.o.CNIPods != "" {
		// The user named the CNI's pods: measure those, whatever the
		// table of known CNIs says about them.
		d.cni.Pods = cni.PodRefs(pods)
		d.cni.Evidence = append(d.cni.Evidence, "CNI pods given by --cni-pods "+d.b.o.CNIPods)
	}
	// Its mode, from its own configuration (bounded; what cannot be read
	// is evidence).
	cni.DetectMode(ctx, d.b.cs, &d.cni)
}

// cniName is the datapath label of the cluster's pod network.
func (d *Deployment) cniName() string {
	if d.cni.Name == "" {
		return "cni-unknown"
	}
	return "cni-" + d.cni.Name
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Datapaths implements backend.Deployment: the host network (the
// node-to-node baseline) and the cluster's pod network (its CNI).
func (d *Deployment) Datapaths() []backend.Datapath {
	return []backend.Datapath{
		{Name: DatapathBaseline, Description: "host network: hostNetwork pods on two nodes (the seeds' node-to-node baseline)",
			PacketPath: "client node stack → node interface → wire → server node's interface → server node stack",
			Skipped:    d.noHost, Config: d.resConfig},
		{Name: d.cniName(), Description: d.cniDescription(), PacketPath: "the cluster's pod network, as its CNI builds it", Config: d.resConfig},
	}
}

func (d *Deployment) cniDescription() string {
	s := "the cluster's pod network"
	if d.cni.Name != "" {
		s += " (CNI " + d.cni.Name
		if d.cni.Version != "" {
			s += " " + d.cni.Version
		}
		if d.cni.Mode != "" {
			s += ": " + d.cni.Mode
		}
		s += ")"
	}
	return s + " on cluster " + d.b.cluster
}

// Reset implements backend.Deployment. A cluster's conntrack tables are
// its nodes', shared with every workload: flushing them would break other
// connections, so cnibench does not.
func (d *Deployment) Reset(context.Context, string) (int, error) {
	return -1, fmt.Errorf("%w: the nodes' conntrack tables are shared with the cluster's workloads and are not flushed", backend.ErrNotSupported)
}

// Labels implements backend.Deployment: the backend, the cluster, and
// the cluster's CNI, its version and its mode (those known).
func (d *Deployment) Labels() map[string]string {
	l := map[string]string{"backend": Name, "cluster": d.b.cluster}
	maps.Copy(l, d.b.facts.Labels())
	switch {
	case d.proxyMode != "":
		// The node's kube-proxy itself, wherever it runs (a DaemonSet, a
		// systemd unit): it overrides what the API shows of it.
		l["kube_proxy_mode"] = d.proxyMode
	case d.noHost != "" && l["kube_proxy_mode"] == cni.KubeProxyNone:
		// No kube-proxy pod, and no host pod to ask the node: a
		// kube-proxy outside pods may still run.
		l["kube_proxy_mode"] = "unknown: no kube-proxy pod, node not asked"
	}
	maps.Copy(l, d.cniLabels())
	maps.Copy(l, d.serviceProxyLabels())
	return l
}

// cniLabels are the labels of the cluster's CNI: cni, cni_version and
// cni_mode, each only if known.
func (d *Deployment) cniLabels() map[string]string {
	l := map[string]string{}
	for k, v := range map[string]string{"cni": d.cni.Name, "cni_version": d.cni.Version, "cni_mode": d.cni.Mode} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// DownTimeout bounds Down's wait until the run's pods and namespace are
// gone. A pod goes only once its CNI has released it (the CNI's DEL), and a
// busy agent releases it late: on the local cluster Cilium 1.15 took 143 s
// to delete the client endpoint of a NetworkPolicy whose 1 000 excepts it
// had split into about 13 200 CIDR prefixes (docs/kubernetes.md), past the
// 2 minutes this was before.
const DownTimeout = 5 * time.Minute

// Down implements backend.Deployment: it removes every object of the run
// and the namespace if the run created it, and waits, at most DownTimeout,
// until they are gone.
func (d *Deployment) Down(ctx context.Context) error {
	return kube.DeleteRun(d.kctx(ctx), d.b.cs, d.ns, d.runID, d.createdNS, DownTimeout)
}

// lineWatcher closes seen at the first line written to it that starts
// with prefix.
type lineWatcher struct {
	prefix string
	seen   chan struct{}
	line   []byte // the line being written
	done   bool
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	for _, c := range p {
		if w.done {
			break
		}
		if c != '\n' {
			w.line = append(w.line, c)
			continue
		}
		if strings.HasPrefix(string(w.line), w.prefix) {
			w.done = true
			close(w.seen)
		}
		w.line = w.line[:0]
	}
	return len(p), nil
}

var _ backend.Deployment = (*Deployment)(nil)
