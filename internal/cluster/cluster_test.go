package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/preflight"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// The fake cluster: two Ready nodes, pods on n1 in 10.244.1.0/24 and on n2
// in 10.244.2.0/24, the Service's ClusterIP.
const (
	n1IP      = "10.0.0.1"
	n2IP      = "10.0.0.2"
	clusterIP = "10.96.0.10"
	testImage = "cnibench.local/cnibench:test"
	testToken = "s3cret-token"
)

// podIPs are the IPs the fake gives the run's pods (host pods: their
// node's).
var podIPs = map[string]string{podSrvA: "10.244.1.10", podCliA: "10.244.1.11", podSrvB: "10.244.2.10", podHostA: n1IP, podHostB: n2IP}

var (
	endpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
)

func testNode(name, ip string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}},
		},
	}
}

// fakeCluster is the fake clientset with a kubelet, a service IP allocator
// and an EndpointSlice controller of its own, and a fake exec that answers
// the agent's probes and `cnibench run`.
type fakeCluster struct {
	t  *testing.T
	cs *fake.Clientset

	// enforce makes connect honour the NetworkPolicies present (an
	// enforcing CNI); false ignores them.
	enforce bool
	// vxlan gives the nodes an up vxlan link (flannel.1).
	vxlan bool
	// failPods are the short names of the pods whose image is not on
	// their node ("all": every pod).
	failPods map[string]bool
	// refuseNodePort refuses NodePort services (as an admission policy
	// might).
	refuseNodePort bool
	// admission refuses the pods named (short names) with the message,
	// in dry runs and creates alike (as PodSecurity does).
	admission map[string]string
	// refuse refuses other objects with the error, in dry runs and
	// creates alike: keyed by resource ("secrets", "namespaces",
	// "networkpolicies") or, for services, "services/TYPE".
	refuse map[string]error

	t0       time.Time
	streamed chan struct{}  // a `cnibench run` happened
	netstats map[string]int // netstat readings per pod

	mu    sync.Mutex
	calls []execCall
}

type execCall struct {
	ns, pod, short string
	cmd            []string
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	f := &fakeCluster{t: t, t0: time.Now(), streamed: make(chan struct{}, 1), netstats: map[string]int{}}
	objs = append([]runtime.Object{testNode("n1", n1IP), testNode("n2", n2IP)}, objs...)
	f.cs = fake.NewClientset(objs...)
	// The kubelet: a created pod runs at once, with its IP (what
	// kube.StartPod waits for: phase Running, every container running, a
	// pod IP), but for failPod, whose image is not there.
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		short := p.Labels["cnibench.io/pod"]
		p.UID = types.UID("uid-" + p.Name)
		if f.failPods[short] || f.failPods["all"] {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: kube.ContainerName, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull",
					Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", p.Spec.Containers[0].Image)}}}}
			return false, nil, nil
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = podIPs[short]
		if p.Status.PodIP == "" {
			p.Status.PodIP = "10.244.9.9"
		}
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
		}
		return false, nil, nil
	})
	// The service IP allocator and the EndpointSlice controller (the fake
	// has neither): the ClusterIP is set and a ready slice made with the
	// selected pods' IPs. The tracker is used directly: the fake's lock is
	// held while reactors run.
	f.cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		if svc.Spec.Type == corev1.ServiceTypeNodePort {
			for i := range svc.Spec.Ports {
				svc.Spec.Ports[i].NodePort = map[string]int32{"bench": 31233, "hairpin": 31235, "nodeport": 31234, "http": 31080}[svc.Spec.Ports[i].Name]
			}
		}
		svc.Spec.ClusterIP = clusterIP
		svc.Spec.ClusterIPs = []string{clusterIP}
		if slices.Contains(svc.Spec.IPFamilies, corev1.IPv6Protocol) {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, "fd00:96::77")
		}
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: svc.Name + "-abcde", Namespace: svc.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
		pods, err := f.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), svc.Namespace)
		if err != nil {
			return true, nil, err
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		for _, p := range pods.(*corev1.PodList).Items {
			if sel.Matches(labels.Set(p.Labels)) && p.Status.PodIP != "" {
				sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}})
			}
		}
		if err := f.cs.Tracker().Create(endpointSlicesGVR, sl, svc.Namespace); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	// Admission and server-side dry runs (the fake stores dry-run
	// objects): a dry run is answered, never stored; f.admission refuses.
	f.cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateActionImpl)
		if !ok {
			return false, nil, nil
		}
		key := a.GetResource().Resource
		switch o := ca.GetObject().(type) {
		case *corev1.Pod:
			if msg, refused := f.admission[o.Labels["cnibench.io/pod"]]; refused {
				return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), o.Name, errors.New(msg))
			}
		case *corev1.Service:
			key += "/" + string(o.Spec.Type)
			if o.Spec.Type == corev1.ServiceTypeNodePort && f.refuseNodePort {
				return true, nil, apierrors.NewForbidden(corev1.Resource("services"), o.Name, errors.New("NodePort services are not allowed"))
			}
		}
		if err, refused := f.refuse[key]; refused {
			return true, nil, err
		}
		if len(ca.CreateOptions.DryRun) > 0 {
			return true, ca.GetObject(), nil
		}
		return false, nil, nil
	})
	return f
}

// backend returns the Backend on the fake cluster.
func (f *fakeCluster) backend(mod func(*Options)) *Backend {
	o := Options{Image: testImage, PullPolicy: corev1.PullNever, CNIConfDir: "/var/lib/{node}/cni/net.d",
		PodTimeout: 5 * time.Second, FootprintWindow: 50 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	b := NewWithClient(o, f.cs, f)
	b.SetCluster("kind-test")
	return b
}

func (f *fakeCluster) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return f.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}

func (f *fakeCluster) record(c execCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

// callsOf returns the commands run whose argv starts with prefix.
func (f *fakeCluster) callsOf(prefix ...string) []execCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []execCall
	for _, c := range f.calls {
		if len(c.cmd) >= len(prefix) && slices.Equal(c.cmd[:len(prefix)], prefix) {
			out = append(out, c)
		}
	}
	return out
}

// flag returns the value of --name in args.
func flag(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// Exec implements kube.Execer.
func (f *fakeCluster) Exec(ctx context.Context, ns, podName, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if container != kube.ContainerName {
		return fmt.Errorf("exec in container %q", container)
	}
	p, err := f.pod(ctx, ns, podName)
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", ns, podName, err)
	}
	short := p.Labels["cnibench.io/pod"]
	f.record(execCall{ns: ns, pod: podName, short: short, cmd: slices.Clone(cmd)})
	if len(cmd) < 2 || cmd[0] != "/cnibench" {
		return fmt.Errorf("unexpected command %q", cmd)
	}
	out := func(v any) error { return json.NewEncoder(stdout).Encode(v) }
	if cmd[1] == "run" {
		select {
		case f.streamed <- struct{}{}:
		default:
		}
		return out(fakeResult(cmd[2:]))
	}
	if len(cmd) < 4 || cmd[1] != "k8s" || cmd[2] != "agent" {
		return fmt.Errorf("unexpected command %q", cmd)
	}
	args := cmd[4:]
	switch cmd[3] {
	case "inspect":
		return out(f.inspect(p, flag(args, "--addr")))
	case "cni-conf":
		if d := flag(args, "--dir"); d != hostCNIConf {
			return fmt.Errorf("cni-conf --dir %q", d)
		}
		return out(agent.CNIConf{Schema: agent.SchemaCNIConf, Dir: hostCNIConf, InUse: "10-flannel.conflist", PluginsInUse: []string{"flannel", "portmap"},
			Files: []agent.CNIFile{{Name: "10-flannel.conflist", NetworkName: "cbr0", CNIVersion: "0.3.1", Plugins: []string{"flannel", "portmap"}, Valid: true}}})
	case "connect":
		return f.connect(ctx, p, args, stdout)
	case "capture":
		// Ready, then capture until a stream started after it ran (or
		// a bound), and report the marker in clear. The streams before
		// (the test's Run calls) do not count: a capture that ended at
		// once would race the check's wait for "ready".
		select {
		case <-f.streamed:
		default:
		}
		fmt.Fprintln(stderr, "ready: capturing on", flag(args, "--iface"))
		select {
		case <-f.streamed:
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		return out(agent.Capture{Schema: agent.SchemaCapture, Iface: flag(args, "--iface"), DurationNS: int64(5 * time.Second),
			Frames: 3000, In: 1500, Out: 1500, MarkerFrames: 1400, ByProtocol: map[string]uint64{"udp/8472": 2990, "arp": 10},
			MarkerByProtocol: map[string]uint64{"udp/8472": 1400}, ScannedFraction: 1, IfaceCoverage: 1})
	case "proxy-mode":
		// The node's kube-proxy answers (as the local cluster's, a
		// process, not a pod: the API shows none).
		return out(agent.ProxyMode{Schema: agent.SchemaProxyMode, Mode: "iptables"})
	case "netstat":
		// Counters grow by one step per reading: the client pod's SYN
		// retransmissions by 3, srv-b's PAWS rejects by 2, each node's
		// SYN retransmissions by 1.
		f.mu.Lock()
		f.netstats[short]++
		n := uint64(f.netstats[short])
		f.mu.Unlock()
		c := map[string]uint64{"TcpExt:TCPSynRetrans": 0, "TcpExt:PAWSTimewait": 0, "Tcp:RetransSegs": 100 * n}
		switch short {
		case podCliA:
			c["TcpExt:TCPSynRetrans"] = 3 * n
		case podSrvB:
			c["TcpExt:PAWSTimewait"] = 2 * n
		case podHostA, podHostB:
			c["TcpExt:TCPSynRetrans"] = n
		}
		return out(agent.Netstat{Schema: agent.SchemaNetstat, TimeUnixNano: time.Now().UnixNano(), Counters: c})
	case "cgroup":
		// Every pod uses exactly 100 mCPU and 30 MiB.
		now := time.Now().UnixNano()
		r := agent.CgroupReport{Schema: agent.SchemaCgroup, Root: flag(args, "--root"), Layout: "v2", TimeUnixNano: now, Pods: []agent.PodCgroup{}}
		for i, a := range args {
			if a == "--pod-uid" {
				r.Pods = append(r.Pods, agent.PodCgroup{UID: args[i+1], CPUUsageNanos: uint64(now-f.t0.UnixNano()) / 10, MemoryWorkingSetBytes: 30 << 20, TimeUnixNano: now})
			}
			// A cgroup by path (kube-proxy outside pods): 50 mCPU and 20 MiB,
			// if it is the node's own.
			if a == "--cgroup" {
				c := agent.PodCgroup{Path: args[i+1], CPUUsageNanos: uint64(now-f.t0.UnixNano()) / 20, MemoryWorkingSetBytes: 20 << 20, TimeUnixNano: now}
				if !strings.Contains(c.Path, map[string]string{podHostA: "n1", podHostB: "n2"}[short]) {
					c = agent.PodCgroup{Path: args[i+1], Error: "cpu: no cgroup " + c.Path, TimeUnixNano: now}
				}
				r.Cgroups = append(r.Cgroups, c)
			}
		}
		return out(r)
	}
	return fmt.Errorf("unknown agent command %q", cmd[3])
}

// fakeResult is a minimal `cnibench run` result.
func fakeResult(args []string) *result.Result {
	r := &result.Result{Schema: result.SchemaResult, Start: time.Unix(1700000000, 0).UTC(),
		Config: map[string]string{"test": flag(args, "--test"), "target": flag(args, "--target"), "service": flag(args, "--service")},
		Repeats: []result.Repeat{
			{Index: 0, DurationSec: 0.2, Metrics: map[string]float64{result.ThroughputBitsPerSec: 9e9}},
			{Index: 1, DurationSec: 0.2, Metrics: map[string]float64{result.ThroughputBitsPerSec: 9.2e9}},
		}}
	r.Summarize()
	return r
}

// inspect answers `agent inspect`: a pod has eth0 at MTU 1450 and its
// default route; a host pod the node's eth0 at 1500 holding the node's IP
// (and flannel.1 if vxlan).
func (f *fakeCluster) inspect(p *corev1.Pod, addr string) agent.Inspect {
	lo := agent.Link{Name: "lo", Index: 1, Type: "device", MTU: 65536, State: "up", OperState: "unknown", Addrs: []string{"127.0.0.1/8"}}
	in := agent.Inspect{Schema: agent.SchemaInspect}
	if !p.Spec.HostNetwork {
		in.Links = []agent.Link{lo, {Name: "eth0", Index: 2, Type: "veth", MTU: 1450, State: "up", OperState: "up", Addrs: []string{p.Status.PodIP + "/24"}}}
		in.DefaultRoute = &agent.Route{Dev: "eth0", Gateway: strings.TrimSuffix(p.Status.PodIP, ".10") + ".1"}
	} else {
		in.Links = []agent.Link{lo, {Name: "eth0", Index: 2, Type: "device", MTU: 1500, State: "up", OperState: "up", Addrs: []string{p.Status.PodIP + "/24"}}}
		if f.vxlan {
			in.Links = append(in.Links, agent.Link{Name: "flannel.1", Index: 3, Type: "vxlan", MTU: 1450, State: "up", OperState: "unknown", VNI: 1, Port: 8472})
		}
		in.DefaultRoute = &agent.Route{Dev: "eth0", Gateway: "10.0.0.254"}
	}
	in.Tunnels = agent.Tunnels(in.Links)
	if addr != "" {
		in.Addr = addr
		for _, l := range in.Links {
			for _, a := range l.Addrs {
				if strings.HasPrefix(a, addr+"/") {
					in.AddrLinkName = l.Name
				}
			}
		}
		if in.AddrLinkName == "" {
			in.AddrError = "no link in this network namespace has " + addr
		}
	}
	return in
}

// connect answers `agent connect`: refused when enforce is on and the
// NetworkPolicies now present deny the connection.
func (f *fakeCluster) connect(ctx context.Context, from *corev1.Pod, args []string, stdout io.Writer) error {
	target := flag(args, "--target")
	host, portS, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(portS)
	count, _ := strconv.Atoi(flag(args, "--count"))
	pods, err := f.cs.CoreV1().Pods(from.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var to *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Status.PodIP == host && !pods.Items[i].Spec.HostNetwork {
			to = &pods.Items[i]
		}
	}
	c := agent.Connect{Schema: agent.SchemaConnect, Target: target, Addr: target, TimeoutMS: 1000, Attempts: count, Errors: []string{}, RTTMicros: []float64{}}
	ok := to != nil
	if ok && f.enforce {
		if ok, err = f.allowed(ctx, from, to, int32(port)); err != nil {
			return err
		}
	}
	if ok {
		c.Connected = count
		for range count {
			c.RTTMicros = append(c.RTTMicros, 80)
		}
	} else {
		c.TimedOut = count
		c.Errors = []string{"dial tcp " + target + ": i/o timeout"}
	}
	return json.NewEncoder(stdout).Encode(c)
}

// allowed evaluates the namespace's NetworkPolicies for a connection from
// one pod to another's port (pod selectors only, which is all the check
// uses).
func (f *fakeCluster) allowed(ctx context.Context, from, to *corev1.Pod, port int32) (bool, error) {
	pols, err := f.cs.NetworkingV1().NetworkPolicies(from.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	selects := func(sel *metav1.LabelSelector, p *corev1.Pod) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && s.Matches(labels.Set(p.Labels))
	}
	portOK := func(ports []networkingv1.NetworkPolicyPort) bool {
		if len(ports) == 0 {
			return true
		}
		for _, p := range ports {
			if (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) && (p.Port == nil || p.Port.IntVal == port) {
				return true
			}
		}
		return false
	}
	inIsolated, inAllowed, outIsolated, outAllowed := false, false, false, false
	for i := range pols.Items {
		np := &pols.Items[i]
		for _, typ := range np.Spec.PolicyTypes {
			switch {
			case typ == networkingv1.PolicyTypeIngress && selects(&np.Spec.PodSelector, to):
				inIsolated = true
				for _, r := range np.Spec.Ingress {
					for _, peer := range r.From {
						if peer.PodSelector != nil && selects(peer.PodSelector, from) && portOK(r.Ports) {
							inAllowed = true
						}
					}
				}
			case typ == networkingv1.PolicyTypeEgress && selects(&np.Spec.PodSelector, from):
				outIsolated = true
				for _, r := range np.Spec.Egress {
					for _, peer := range r.To {
						if peer.PodSelector != nil && selects(peer.PodSelector, to) && portOK(r.Ports) {
							outAllowed = true
						}
					}
				}
			}
		}
	}
	return (!inIsolated || inAllowed) && (!outIsolated || outAllowed), nil
}

// inventory lists the run's objects left in namespace ns, as "kind name".
func (f *fakeCluster) inventory(t *testing.T, ns string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	pods, err := f.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		out = append(out, "pod "+o.Name)
	}
	svcs, _ := f.cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	for _, o := range svcs.Items {
		out = append(out, "service "+o.Name)
	}
	secrets, _ := f.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	for _, o := range secrets.Items {
		out = append(out, "secret "+o.Name)
	}
	nps, _ := f.cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	for _, o := range nps.Items {
		out = append(out, "networkpolicy "+o.Name)
	}
	return out
}

// up brings the backend up and returns the deployment.
func up(t *testing.T, ctx context.Context, b *Backend) *Deployment {
	t.Helper()
	return upSpec(t, ctx, b, backend.Spec{Token: testToken, MTU: 9000})
}

// upSpec is up with a spec of its own (a scenario's).
func upSpec(t *testing.T, ctx context.Context, b *Backend, spec backend.Spec) *Deployment {
	t.Helper()
	dep, err := b.Up(ctx, spec)
	if dep == nil {
		t.Fatalf("Up returned no deployment (err %v)", err)
	}
	d := dep.(*Deployment)
	t.Cleanup(func() { _ = d.Down(context.Background()) })
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	return d
}

// measured is the suite's lookup of the matrix's runs: tcp_stream ×1
// cross-node at 8.1 Gbit/s through the pod network, 9 Gbit/s between the
// nodes.
func measured(match map[string]string) []result.Run {
	runs := []result.Run{
		{Labels: map[string]string{"datapath": "cni-flannel", "path": PathCrossNode, "test": engine.TCPStream, "flows": "1"},
			Summary: map[string]stats.Summary{result.ThroughputBitsPerSec: {N: 5, Median: 8.1e9}}},
		{Labels: map[string]string{"datapath": DatapathBaseline, "path": PathNodeToNode, "test": engine.TCPStream, "flows": "1"},
			Summary: map[string]stats.Summary{result.ThroughputBitsPerSec: {N: 5, Median: 9e9}}},
	}
	var out []result.Run
	for _, r := range runs {
		ok := true
		for k, v := range match {
			ok = ok && r.Labels[k] == v
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func findingsByCheck(fs []result.Finding) map[string]result.Finding {
	m := map[string]result.Finding{}
	for _, f := range fs {
		m[f.Check] = f
	}
	return m
}

// TestCycle runs Up, Paths, Run, Findings and Down against the fake
// cluster with an enforcing CNI, without encapsulation on the nodes.
func TestCycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	fc.enforce = true
	b := fc.backend(nil)
	if b.Name() != Name {
		t.Errorf("name %q", b.Name())
	}
	start := time.Now()
	d := up(t, ctx, b)
	t.Logf("Up took %v", time.Since(start))
	if len(d.upErrors) > 0 {
		t.Errorf("facts not gathered: %q", d.upErrors)
	}
	ns := DefaultNamespace
	if !d.createdNS {
		t.Error("the run's namespace was not created")
	}
	n, err := fc.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[kube.ManagedByKey] != kube.ManagedBy || n.Labels[kube.RunKey] != d.runID || n.Labels[preflight.PodSecurityEnforceKey] != "privileged" {
		t.Errorf("namespace labels %v", n.Labels)
	}

	t.Run("datapaths", func(t *testing.T) {
		dps := d.Datapaths()
		var names []string
		for _, dp := range dps {
			names = append(names, dp.Name)
			if dp.Description == "" || dp.PacketPath == "" || dp.Skipped != "" {
				t.Errorf("datapath %+v", dp)
			}
		}
		if strings.Join(names, ",") != "baseline,cni-flannel" {
			t.Errorf("datapaths %q", names)
		}
		if want := "the cluster's pod network (CNI flannel) on cluster kind-test"; dps[1].Description != want {
			t.Errorf("description %q, want %q", dps[1].Description, want)
		}
		// The CNI is named by the CNI configuration only: no version,
		// and no kube-flannel-cfg to read the mode from.
		// With the cluster's identity: the fake API server's version,
		// and no kube-proxy pod.
		if l := d.Labels(); l["backend"] != "kubernetes" || l["cluster"] != "kind-test" || l["cni"] != "flannel" ||
			l["k8s_version"] == "" || l["kube_proxy_mode"] != "iptables" || len(l) != 5 {
			t.Errorf("labels %v", l)
		}
		if d.Paths("cni-calico") != nil || d.Paths("") != nil {
			t.Error("paths of an unknown datapath")
		}
		if tw, err := d.Reset(ctx, "cni-flannel"); tw != -1 || !errors.Is(err, backend.ErrNotSupported) {
			t.Errorf("Reset = %d, %v", tw, err)
		}
		ev := d.Evidence("cni-flannel")
		m, warns := ev.End()
		want := map[string]float64{MetricPodsSynRetransmits: 3, MetricPodsPAWSTimewait: 2, MetricNodesSynRetransmits: 2, MetricNodesPAWSTimewait: 0}
		if !maps.Equal(m, want) || len(warns) != 0 {
			t.Errorf("evidence %v (warnings %q), want %v", m, warns, want)
		}
		if w := ev.Check(PathHairpin, m); len(w) != 1 || !strings.Contains(w[0], "hairpin: 3 SYN(s) retransmitted") || !strings.Contains(w[0], "2 segment(s) refused by TIME_WAIT") {
			t.Errorf("check %q", w)
		}
		if w := ev.Check(PathHairpin, map[string]float64{}); w != nil {
			t.Errorf("check without retransmissions %q", w)
		}
	})

	t.Run("paths", func(t *testing.T) {
		type want struct {
			client, srvNode, target, mtu string
			clientNode                   string
			tcp, http                    string // TargetArgs
			udp                          bool   // udp_stream skipped
		}
		srvA, srvB := podIPs[podSrvA]+":12870", podIPs[podSrvB]+":12870"
		wants := map[string]want{
			PathSameNode:      {client: podCliA, clientNode: "n1", srvNode: "n1", target: srvA, mtu: "1450", tcp: "--target " + srvA, http: "--target " + srvA},
			PathCrossNode:     {client: podCliA, clientNode: "n1", srvNode: "n2", target: srvB, mtu: "1450", tcp: "--target " + srvB, http: "--target " + srvB},
			PathPodToEndpoint: {client: podCliA, clientNode: "n1", srvNode: "n2", target: podIPs[podSrvB], mtu: "1450", tcp: "--service " + podIPs[podSrvB] + ":12871", http: "--url http://" + podIPs[podSrvB] + ":8080/", udp: true},
			PathPodToService:  {client: podCliA, clientNode: "n1", srvNode: "n2", target: clusterIP, mtu: "1450", tcp: "--service " + clusterIP + ":12872", http: "--url http://" + clusterIP + ":8080/", udp: true},
			PathHairpin:       {client: podSrvB, clientNode: "n2", srvNode: "n2", target: clusterIP, mtu: "1450", tcp: "--service " + clusterIP + ":12873", http: "--url http://" + clusterIP + ":8080/", udp: true},
			PathNodeToNode:    {client: podHostA, clientNode: "n1", srvNode: "n2", target: n2IP + ":15201", mtu: "1500", tcp: "--target " + n2IP + ":15201", http: "--target " + n2IP + ":15201"},
			PathPodToNodePort: {client: podCliA, clientNode: "n1", srvNode: "n2", target: n2IP, mtu: "1450", tcp: "--service " + n2IP + ":31234", http: "--url http://" + n2IP + ":31080/", udp: true},
		}
		var kinds []string
		paths := append(slices.Clone(d.Paths("cni-flannel")), d.Paths(DatapathBaseline)...)
		if len(d.Paths(DatapathBaseline)) != 1 {
			t.Errorf("baseline paths %+v", d.Paths(DatapathBaseline))
		}
		for _, p := range paths {
			kinds = append(kinds, p.Kind)
			w, ok := wants[p.Kind]
			if !ok {
				t.Errorf("unexpected path %q", p.Kind)
				continue
			}
			pl, ok := p.Client.(place)
			if !ok || pl.ns != ns || pl.pod != d.name(w.client) || pl.String() != ns+"/"+d.name(w.client) {
				t.Errorf("%s: client %v, want %s", p.Kind, p.Client, d.name(w.client))
			}
			if p.Target != w.target {
				t.Errorf("%s: target %q, want %q", p.Kind, p.Target, w.target)
			}
			mtu, _ := strconv.Atoi(w.mtu)
			if p.PathMTU != mtu || p.PodMTU != mtu {
				t.Errorf("%s: path MTU %d pod MTU %d, want %d", p.Kind, p.PathMTU, p.PodMTU, mtu)
			}
			// The mtu label is the node's (the wire's, 1500 here) on every
			// path, so that tunnelled paths pair with the baseline.
			// The nodes have no zone label (and the fake's no node facts).
			if p.Labels["client_node"] != w.clientNode || p.Labels["server_node"] != w.srvNode || p.Labels["mtu"] != "1500" ||
				p.Labels["client_zone"] != "unknown" || p.Labels["server_zone"] != "unknown" || p.Labels["ip_family"] != "ipv4" || len(p.Labels) != 6 {
				t.Errorf("%s: labels %v", p.Kind, p.Labels)
			}
			if a, why := p.TargetArgs(engine.TCPRR); strings.Join(a, " ") != w.tcp || why != "" {
				t.Errorf("%s: tcp_rr args %q (%q), want %q", p.Kind, a, why, w.tcp)
			}
			if a, why := p.TargetArgs(engine.HTTP); strings.Join(a, " ") != w.http || why != "" {
				t.Errorf("%s: http args %q (%q), want %q", p.Kind, a, why, w.http)
			}
			if _, why := p.TargetArgs(engine.UDPStream); (why != "") != w.udp {
				t.Errorf("%s: udp_stream why %q", p.Kind, why)
			}
		}
		if strings.Join(kinds, ",") != "same-node,cross-node,pod-to-endpoint,pod-to-service,hairpin,pod-to-nodeport,node-to-node" {
			t.Errorf("paths %q", kinds)
		}
	})

	t.Run("objects", func(t *testing.T) {
		secretName := "cnibench-token-" + d.runID
		sec, err := fc.cs.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(sec.Data[kube.TokenKey]) != testToken || sec.Labels[kube.RunKey] != d.runID {
			t.Errorf("secret %+v", sec)
		}
		pods, err := fc.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantNode := map[string]string{podSrvA: "n1", podCliA: "n1", podHostA: "n1", podSrvB: "n2", podHostB: "n2"}
		var shorts []string
		for _, p := range pods.Items {
			short := p.Labels["cnibench.io/pod"]
			shorts = append(shorts, short)
			if p.Name != d.name(short) || p.Labels[kube.ManagedByKey] != kube.ManagedBy || p.Labels[kube.RunKey] != d.runID || p.Labels[kube.RoleKey] == "" {
				t.Errorf("pod %s: name or labels %v", p.Name, p.Labels)
			}
			if p.Spec.NodeName != wantNode[short] {
				t.Errorf("pod %s on node %q, want %q", short, p.Spec.NodeName, wantNode[short])
			}
			c := p.Spec.Containers[0]
			if c.Image != testImage || c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("pod %s: image %s %s", short, c.Image, c.ImagePullPolicy)
			}
			if len(c.Env) != 1 || c.Env[0].Name != kube.TokenEnv || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef == nil ||
				c.Env[0].ValueFrom.SecretKeyRef.Name != secretName || c.Env[0].ValueFrom.SecretKeyRef.Key != kube.TokenKey {
				t.Errorf("pod %s: env %+v, want %s from secret %s", short, c.Env, kube.TokenEnv, secretName)
			}
			host := short == podHostA || short == podHostB
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if p.Spec.HostNetwork != host || privileged != host {
				t.Errorf("pod %s: hostNetwork %v privileged %v", short, p.Spec.HostNetwork, privileged)
			}
			var mounts []string
			for i, m := range c.VolumeMounts {
				hp := p.Spec.Volumes[i].HostPath
				if hp == nil || p.Spec.Volumes[i].Name != m.Name {
					t.Errorf("pod %s: volume %+v", short, p.Spec.Volumes[i])
					continue
				}
				mounts = append(mounts, fmt.Sprintf("%s:%s:%v", hp.Path, m.MountPath, m.ReadOnly))
			}
			wantMounts := ""
			if host {
				wantMounts = "/sys/fs/cgroup:/host/sys/fs/cgroup:true,/var/lib/" + wantNode[short] + "/cni/net.d:/host/cni/net.d:true"
			}
			if strings.Join(mounts, ",") != wantMounts {
				t.Errorf("pod %s: mounts %q, want %q", short, mounts, wantMounts)
			}
		}
		slices.Sort(shorts)
		if strings.Join(shorts, ",") != "cli-a,host-a,host-b,srv-a,srv-b" {
			t.Errorf("pods %q", shorts)
		}
		hb, _ := fc.pod(ctx, ns, d.name(podHostB))
		if got := strings.Join(hb.Spec.Containers[0].Args, " "); got != "serve --listen "+n2IP+":15201" {
			t.Errorf("host-b args %q", got)
		}
		sb, _ := fc.pod(ctx, ns, d.name(podSrvB))
		if got := strings.Join(sb.Spec.Containers[0].Args, " "); got != "serve --listen :12870 --http-listen :8080 --service-listen :12871,:12872,:12873,:12874" {
			t.Errorf("srv-b args %q", got)
		}
		svc, err := fc.cs.CoreV1().Services(ns).Get(ctx, d.name(svcName), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ports []string
		for _, p := range svc.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%s %d→%s", p.Name, p.Port, p.TargetPort.String()))
		}
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Selector["cnibench.io/service"] != d.runID || len(svc.Spec.Selector) != 1 ||
			strings.Join(ports, ",") != "bench 12872→12872,hairpin 12873→12873,nodeport 12874→12874,http 8080→8080" || svc.Labels[kube.RunKey] != d.runID {
			t.Errorf("service %+v", svc.Spec)
		}
	})

	t.Run("run", func(t *testing.T) {
		for _, dp := range []string{"cni-flannel", DatapathBaseline} {
			for _, p := range d.Paths(dp) {
				targs, _ := p.TargetArgs(engine.TCPStream)
				args := append([]string{"run", "--test", engine.TCPStream, "--format", "json"}, targs...)
				before := len(fc.callsOf("/cnibench", "run"))
				stdout, _, err := d.Run(ctx, p.Client, args)
				if err != nil {
					t.Fatalf("%s: %v", p.Kind, err)
				}
				set, err := result.Decode(stdout)
				if err != nil || len(set.Runs) != 1 || set.Runs[0].Summary[result.ThroughputBitsPerSec].N != 2 {
					t.Errorf("%s: result %v %+v", p.Kind, err, set)
				}
				calls := fc.callsOf("/cnibench", "run")
				if len(calls) != before+1 {
					t.Fatalf("%s: %d runs recorded", p.Kind, len(calls)-before)
				}
				c := calls[len(calls)-1]
				if c.ns != ns || c.pod != p.Client.(place).pod || !slices.Equal(c.cmd, append([]string{"/cnibench", "run", stopOnStdinEOF}, args[1:]...)) {
					t.Errorf("%s: ran %q in %s", p.Kind, c.cmd, c.pod)
				}
				w := map[string][2]string{
					PathSameNode:      {podCliA, "--target " + podIPs[podSrvA] + ":12870"},
					PathCrossNode:     {podCliA, "--target " + podIPs[podSrvB] + ":12870"},
					PathPodToEndpoint: {podCliA, "--service " + podIPs[podSrvB] + ":12871"},
					PathPodToService:  {podCliA, "--service " + clusterIP + ":12872"},
					PathHairpin:       {podSrvB, "--service " + clusterIP + ":12873"},
					PathNodeToNode:    {podHostA, "--target " + n2IP + ":15201"},
					PathPodToNodePort: {podCliA, "--service " + n2IP + ":31234"},
				}[p.Kind]
				if c.short != w[0] || !strings.HasSuffix(strings.Join(c.cmd, " "), " "+w[1]) {
					t.Errorf("%s: ran %q in %s, want %q in %s", p.Kind, c.cmd, c.short, w[1], w[0])
				}
			}
		}
		if _, _, err := d.Run(ctx, nowhere{}, []string{"run"}); err == nil || !strings.Contains(err.Error(), "cannot run at nowhere") {
			t.Errorf("run at a foreign place: %v", err)
		}
	})

	t.Run("findings", func(t *testing.T) {
		start := time.Now()
		fs := d.Findings(ctx, measured)
		t.Logf("Findings took %v", time.Since(start))
		var checks []string
		for _, f := range fs {
			checks = append(checks, f.Check)
			for k, v := range map[string]string{"backend": "kubernetes", "cluster": "kind-test", "cni": "flannel", "client_node": "n1", "server_node": "n2"} {
				if f.Labels[k] != v {
					t.Errorf("%s: label %s = %q, want %q", f.Check, k, f.Labels[k], v)
				}
			}
			if f.Summary == "" {
				t.Errorf("%s: no summary", f.Check)
			}
		}
		if strings.Join(checks, ",") != strings.Join(Checks, ",") {
			t.Errorf("checks %q", checks)
		}
		m := findingsByCheck(fs)

		cni := m["cni"]
		if cni.Verdict != "identified" || cni.Summary != "the cluster's CNI is flannel" ||
			!slices.Contains(cni.Evidence, "CNI configuration in use on n1: 10-flannel.conflist (plugins flannel, portmap)") ||
			!slices.Contains(cni.Evidence, "mode unknown: no ConfigMap kube-flannel-cfg in namespace kube-flannel or kube-system") {
			t.Errorf("cni: %+v", cni)
		}
		if _, ok := cni.Labels["cni_mode"]; ok {
			t.Errorf("cni: mode label %q without a mode", cni.Labels["cni_mode"])
		}

		mtu := m["mtu"]
		if mtu.Verdict != "misconfigured" || !strings.Contains(mtu.Summary, "pod MTU 1450 is 50 bytes below node MTU 1500 less no encapsulation") {
			t.Errorf("mtu: %+v", mtu)
		}
		if mtu.Metrics["pod_mtu"] != 1450 || mtu.Metrics["node_mtu"] != 1500 || mtu.Metrics["encap_overhead_bytes"] != 0 {
			t.Errorf("mtu metrics %v", mtu.Metrics)
		}
		if c := mtu.Metrics["throughput_cost_pct"]; c < 9.99 || c > 10.01 || mtu.Metrics["pod_throughput_bits_per_sec"] != 8.1e9 {
			t.Errorf("mtu cost %v", mtu.Metrics)
		}
		ev := strings.Join(mtu.Evidence, "\n")
		for _, s := range []string{"client pod " + d.name(podCliA) + ": default route MTU 1450 (its interface's)", "node n1: interface eth0 (holding 10.0.0.1) MTU 1500", "(10.0 % less through the pod network"} {
			if !strings.Contains(ev, s) {
				t.Errorf("mtu evidence lacks %q:\n%s", s, ev)
			}
		}

		np := m["network_policy"]
		if np.Verdict != "enforced" || np.Metrics["cases"] != 4 || np.Metrics["cases_as_expected"] != 4 {
			t.Errorf("network_policy: %+v", np)
		}
		if len(np.Evidence) != 5 || !strings.HasPrefix(np.Evidence[0], "no policy: cli-a → srv-b connected (2 of 2)") {
			t.Errorf("network_policy evidence %q", np.Evidence)
		}
		for _, e := range np.Evidence[1:] {
			if !strings.Contains(e, "as expected") {
				t.Errorf("network_policy case %q", e)
			}
		}
		if left := fc.inventory(t, ns); slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, "networkpolicy ") }) {
			t.Errorf("policies left: %q", left)
		}

		enc := m["encryption"]
		if enc.Verdict != "clear" || enc.Labels["node"] != "n2" || enc.Labels["iface"] != "eth0" || enc.Metrics["marker_frames"] != 1400 {
			t.Errorf("encryption: %+v", enc)
		}
		capt := fc.callsOf("/cnibench", "k8s", "agent", "capture")
		if len(capt) != 1 || capt[0].short != podHostB || flag(capt[0].cmd, "--iface") != "eth0" {
			t.Errorf("captures %+v", capt)
		}

		fp := m["cni_footprint"]
		if fp.Verdict != "none" || fp.Metrics["cni_pods"] != 0 || !strings.HasPrefix(fp.Summary, "flannel runs no pods") {
			t.Errorf("cni_footprint: %+v", fp)
		}
	})

	t.Run("down", func(t *testing.T) {
		if err := d.Down(ctx); err != nil {
			t.Fatal(err)
		}
		if left := fc.inventory(t, ns); len(left) > 0 {
			t.Errorf("left after Down: %q", left)
		}
		if _, err := fc.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s: %v", ns, err)
		}
		// The fake runs no EndpointSlice controller nor namespace
		// controller: the slice made for the Service is left, which
		// DeleteRun does not delete (a cluster's controllers do).
		sl, _ := fc.cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		if len(sl.Items) != 1 {
			t.Errorf("endpoint slices %d", len(sl.Items))
		}
		// A second Down is harmless.
		if err := d.Down(ctx); err != nil {
			t.Errorf("second Down: %v", err)
		}
	})
}

type nowhere struct{}

func (nowhere) String() string { return "nowhere" }

// With a vxlan link up on the nodes, pod MTU 1450 is right; only the
// checks asked for run.
func TestFindingsMTUWithVXLAN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	fc.vxlan = true
	d := up(t, ctx, fc.backend(func(o *Options) { o.Checks = []string{"mtu"} }))
	none := func(map[string]string) []result.Run { return nil }
	fs := d.Findings(ctx, none)
	if len(fs) != 1 || fs[0].Check != "mtu" {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.Verdict != "correct" || f.Summary != "pod MTU 1450 = node MTU 1500 less encapsulation vxlan flannel.1 (50 bytes)" || f.Metrics["encap_overhead_bytes"] != 50 {
		t.Errorf("mtu: %+v", f)
	}
	if _, ok := f.Metrics["throughput_cost_pct"]; ok || !strings.Contains(strings.Join(f.Evidence, "\n"), "no tcp_stream ×1 cross-node and node-to-node runs") {
		t.Errorf("mtu priced without runs: %+v", f)
	}
	if len(fc.callsOf("/cnibench", "k8s", "agent", "connect")) != 0 || len(fc.callsOf("/cnibench", "k8s", "agent", "capture")) != 0 {
		t.Error("checks not asked for ran")
	}
	if fs := d.Findings(ctx, measured); len(fs) != 1 || fs[0].Metrics["throughput_cost_pct"] == 0 {
		t.Errorf("findings %+v", fs)
	}
	noChecks := fc.backend(func(o *Options) { o.Checks = []string{"none"} })
	d.b = noChecks
	if fs := d.Findings(ctx, measured); len(fs) != 0 {
		t.Errorf("--checks none: %+v", fs)
	}
}

// A CNI that ignores NetworkPolicy is "not-enforced". Each denied case
// waits policyWait for a refusal that never comes, shortened here (not
// parallel: it sets the package's wait).
func TestFindingsPolicyNotEnforced(t *testing.T) {
	w, p := policyWait, policyPoll
	policyWait, policyPoll = 300*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { policyWait, policyPoll = w, p })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc := newFakeCluster(t)
	d := up(t, ctx, fc.backend(func(o *Options) { o.Checks = []string{"network_policy"} }))
	fs := d.Findings(ctx, measured)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.Verdict != "not-enforced" || f.Metrics["cases"] != 4 || f.Metrics["cases_as_expected"] != 1 {
		t.Errorf("network_policy: %+v", f)
	}
	if ev := strings.Join(f.Evidence, "\n"); !strings.Contains(ev, "ingress deny: cli-a → srv-b: expected refused, still connected 2 of 2 after 300ms") {
		t.Errorf("evidence:\n%s", ev)
	}
	if left := fc.inventory(t, DefaultNamespace); slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, "networkpolicy ") }) {
		t.Errorf("policies left: %q", left)
	}
}

// The CNI's pods (flannel's DaemonSet on the two nodes and a third node
// without a host pod of the run) are measured from their cgroups, idle and
// under load; the third is reported not measured (no metrics client).
func TestFindingsFootprint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	flannel := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-flannel", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "flannel"}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-flannel", Image: "ghcr.io/flannel-io/flannel:v0.25.1"}}},
		}
	}
	// kube-flannel.yml's ConfigMap, which the CNI's mode is read from.
	netConf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-flannel-cfg", Namespace: "kube-flannel"},
		Data: map[string]string{"net-conf.json": `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`}}
	fc := newFakeCluster(t, testNode("n3", "10.0.0.3"), flannel("kube-flannel-ds-a", "n1"), flannel("kube-flannel-ds-b", "n2"), flannel("kube-flannel-ds-c", "n3"), netConf)
	d := up(t, ctx, fc.backend(func(o *Options) { o.Checks = []string{"cni", "cni_footprint"} }))
	if d.client.Name != "n1" || d.server.Name != "n2" {
		t.Fatalf("nodes %s %s", d.client.Name, d.server.Name)
	}
	start := time.Now()
	m := findingsByCheck(d.Findings(ctx, measured))
	t.Logf("Findings took %v", time.Since(start))
	if f := m["cni"]; f.Verdict != "identified" || f.Summary != "the cluster's CNI is flannel v0.25.1 (vxlan)" ||
		f.Labels["cni"] != "flannel" || f.Labels["cni_version"] != "v0.25.1" || f.Labels["cni_mode"] != "vxlan" ||
		!slices.Contains(f.Evidence, "mode vxlan, from ConfigMap kube-flannel/kube-flannel-cfg: backend=vxlan network=10.244.0.0/16") {
		t.Errorf("cni: %+v", f)
	}
	if f := m["cni_footprint"]; f.Labels["cni_version"] != "v0.25.1" || f.Labels["cni_mode"] != "vxlan" {
		t.Errorf("cni_footprint labels %v", f.Labels)
	}
	// Every run carries the CNI, its version and mode.
	if l := d.Labels(); !maps.Equal(l, map[string]string{"backend": "kubernetes", "cluster": "kind-test", "cni": "flannel", "cni_version": "v0.25.1", "cni_mode": "vxlan",
		"k8s_version": l["k8s_version"], "kube_proxy_mode": "iptables"}) {
		t.Errorf("labels %v", l)
	}
	if dp := d.Datapaths()[1]; dp.Description != "the cluster's pod network (CNI flannel v0.25.1: vxlan) on cluster kind-test" {
		t.Errorf("description %q", dp.Description)
	}
	f := m["cni_footprint"]
	if f.Verdict != "measured" || f.Metrics["cni_pods"] != 3 || f.Metrics["cni_pods_measured"] != 2 {
		t.Fatalf("cni_footprint: %+v", f)
	}
	// 100 mCPU and 30 MiB each, as the fake cgroups say.
	for _, k := range []string{"cpu_millicores_idle", "cpu_millicores_load"} {
		if v := f.Metrics[k]; v < 199 || v > 201 {
			t.Errorf("%s = %v, want 200", k, v)
		}
	}
	if f.Metrics["memory_bytes_idle"] != 60<<20 || f.Metrics["memory_bytes_load"] != 60<<20 {
		t.Errorf("memory %v", f.Metrics)
	}
	ev := strings.Join(f.Evidence, "\n")
	if !strings.Contains(ev, "kube-flannel/kube-flannel-ds-c on n3: not measured: on node n3, which has no host pod of the run, and no metrics.k8s.io client") ||
		!strings.Contains(ev, "kube-flannel/kube-flannel-ds-a on n1: idle 100.0 mCPU 30.0 MiB") {
		t.Errorf("evidence:\n%s", ev)
	}
	// Each helper read its node's pod, twice per sample.
	cg := fc.callsOf("/cnibench", "k8s", "agent", "cgroup")
	perHelper := map[string]string{}
	for _, c := range cg {
		if flag(c.cmd, "--root") != hostCgroupRoot {
			t.Errorf("cgroup root %q", c.cmd)
		}
		perHelper[c.short] = flag(c.cmd, "--pod-uid")
	}
	if len(cg) != 8 || perHelper[podHostA] != "uid-kube-flannel-ds-a" || perHelper[podHostB] != "uid-kube-flannel-ds-b" {
		t.Errorf("cgroup reads %+v", cg)
	}
	// The load: 8 flows from the client pod to the cross-node server.
	load := fc.callsOf("/cnibench", "run")
	if len(load) != 1 || load[0].short != podCliA || flag(load[0].cmd, "--flows") != "8" || flag(load[0].cmd, "--target") != podIPs[podSrvB]+":12870" {
		t.Errorf("load runs %+v", load)
	}
}

// A pod that cannot start fails Up at once with the image hint; Down still
// removes what was created, and leaves a namespace the run did not create.
func TestUpPodFails(t *testing.T) {
	t.Run("one pod", func(t *testing.T) { testUpPodFails(t, map[string]bool{podSrvB: true}) })
	t.Run("every pod", func(t *testing.T) { testUpPodFails(t, map[string]bool{"all": true}) })
}

func testUpPodFails(t *testing.T, fail map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const ns = "bench"
	fc := newFakeCluster(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	fc.failPods = fail
	b := fc.backend(func(o *Options) { o.Namespace = ns; o.PodTimeout = time.Minute })
	start := time.Now()
	dep, err := b.Up(ctx, backend.Spec{Token: testToken})
	if time.Since(start) > 2*time.Second {
		t.Errorf("Up took %v: it must fail at once", time.Since(start))
	}
	if err == nil {
		t.Fatal("Up succeeded")
	}
	want := []string{"ErrImageNeverPull", "is not present with pull policy of Never", "cnibench image build --out FILE", "--image"}
	if fail["all"] {
		// One line: the first pod's error (sorted) and how many more.
		want = append(want, "cli-a", "(and 4 more of the run's pods failed)")
	} else {
		want = append(want, "srv-b")
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error has several lines: %q", err)
	}
	if dep == nil {
		t.Fatal("no deployment to bring down")
	}
	d := dep.(*Deployment)
	if d.createdNS {
		t.Error("the existing namespace counts as created")
	}
	if left := fc.inventory(t, ns); len(left) != 6 { // 5 pods, the secret; no service
		t.Errorf("before Down: %q", left)
	}
	if err := dep.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if left := fc.inventory(t, ns); len(left) > 0 {
		t.Errorf("left after Down: %q", left)
	}
	if _, err := fc.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace the run did not create: %v", err)
	}
}

// Up fails, leaving nothing to remove, when there are no two usable
// nodes.
func TestUpNoNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	if err := fc.cs.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, err := fc.backend(nil).Up(ctx, backend.Spec{Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "need two different usable nodes") {
		t.Fatalf("err = %v", err)
	}
	if err := dep.Down(ctx); err != nil {
		t.Errorf("Down: %v", err)
	}
}

// A cluster that refuses NodePort services gets a ClusterIP service: the
// other service paths still run, the nodeport path's cells are skipped
// with the API server's reason.
func TestUpWithoutNodePort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	fc.refuseNodePort = true
	d := up(t, ctx, fc.backend(nil))
	if d.svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service type %s", d.svc.Spec.Type)
	}
	for _, p := range d.Paths(d.cniName()) {
		_, why := p.TargetArgs(engine.TCPRR)
		switch p.Kind {
		case PathPodToNodePort:
			if !strings.Contains(why, "refused a NodePort service") || !strings.Contains(why, "not allowed") {
				t.Errorf("nodeport why %q", why)
			}
		default:
			if why != "" {
				t.Errorf("%s: why %q", p.Kind, why)
			}
		}
	}
}
