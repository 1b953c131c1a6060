package cluster

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
)

// Paths of a run, as labelled in the results (the lab's names where the
// lab has the same path).
const (
	PathSameNode     = "same-node"
	PathCrossNode    = "cross-node"
	PathPodToService = "pod-to-service"
	// PathPodToEndpoint is pod-to-service's reference: the same
	// session-less client straight to the service's endpoint (the
	// cross-node server pod), so that the two differ in the service's
	// translation only.
	PathPodToEndpoint = "pod-to-endpoint"
	// PathPodToNodePort is the client pod to the server node's
	// InternalIP at the service's NodePort (service mode).
	PathPodToNodePort = "pod-to-nodeport"
	PathHairpin       = "hairpin"
	PathNodeToNode    = "node-to-node"
	// DatapathBaseline is the host network's datapath, as the lab's
	// node-to-node baseline is named.
	DatapathBaseline = "baseline"
)

// Ports of the cross-node server's session-less listeners, one per path
// (the Service's targets): tcp_crr's server closes first, so its TIME_WAIT
// sockets stay on the server's port, and a connection through a VIP and
// one to the pod itself carry different TCP timestamp offsets for the same
// 4-tuple (the client's offset is per destination address): sharing a
// port, one path's TIME_WAIT sockets would refuse the other's SYNs (PAWS),
// a 1 s retransmission each, and a path's figure would depend on which
// cell ran before it.
const (
	servicePort  = 12871 // pod-to-endpoint (the pod's own address)
	svcPort      = 12872 // pod-to-service
	hairpinPort  = 12873 // hairpin
	nodePortPort = 12874 // pod-to-nodeport
	httpPort     = 8080  // http on every service path (its client closes first)
)

// buildPaths lists the runnable paths: the pod network's once per IP
// family (--ip-family), the pairs and LoadBalancer paths, and the
// node-to-node baseline at serverIP (the first family's).
func (d *Deployment) buildPaths(serverIP string) {
	podMTU, nodeMTU := 0, 0
	if d.podIf != nil {
		podMTU = d.podIf.DefaultRouteMTU()
	}
	if d.nodeIf != nil {
		nodeMTU = d.nodeIf.AddrMTU()
	}
	fams := families(d.b.o.IPFamily)
	d.paths = nil
	for _, f := range fams {
		d.paths = append(d.paths, d.familyPaths(f, familySuffix(f, fams), podMTU, nodeMTU)...)
	}
	if p := d.pairsPath(podMTU, nodeMTU); p != nil {
		d.paths = append(d.paths, *p)
	}
	if p := d.lbPath(podMTU, nodeMTU); p != nil {
		d.paths = append(d.paths, *p)
	}
	if p := d.lbExternalPath(podMTU, nodeMTU); p != nil {
		d.paths = append(d.paths, *p)
	}
	if d.noHost != "" {
		return
	}
	l := withMTU(nodeLabels(d.client, d.server), nodeMTU)
	l["ip_family"] = fams[0]
	d.baseline = []backend.Path{{Kind: PathNodeToNode, Client: place{d.ns, d.name(podHostA)},
		Target: net.JoinHostPort(serverIP, strconv.Itoa(d.b.o.HostPort)), PathMTU: nodeMTU, PodMTU: nodeMTU, Labels: l}}
}

// familyPaths are the pod network's paths over IP family f, their names
// suffixed with suffix.
func (d *Deployment) familyPaths(f, suffix string, podMTU, nodeMTU int) []backend.Path {
	port := strconv.Itoa(engine.DefaultPort)
	labels := func(c, s *corev1.Node) map[string]string {
		l := withMTU(nodeLabels(c, s), nodeMTU)
		l["ip_family"] = f
		return l
	}
	cli := place{d.ns, d.name(podCliA)}
	pod := func(kind, target string, srvNode *corev1.Node) backend.Path {
		return backend.Path{Kind: kind + suffix, Client: cli, Target: target, PathMTU: podMTU, PodMTU: podMTU, Labels: labels(d.client, srvNode)}
	}
	svcIP, srvB := serviceIPOf(d.svc, f), podIPOf(d.pods[podSrvB], f)
	viaService := func(p backend.Path, ip string, bench int32) backend.Path {
		p.Target, p.Args = ip, serviceArgs(ip, bench, httpPort)
		if ip == "" {
			why := "the service has no " + f + " cluster IP"
			p.Args = func(string) ([]string, string) { return nil, why }
		}
		return p
	}
	serverIP := nodeIPOf(d.server, f)
	nodePort := backend.Path{Kind: PathPodToNodePort + suffix, Client: cli, Target: serverIP, PathMTU: podMTU, PodMTU: podMTU,
		Labels: labels(d.client, d.server)}
	bench, web := nodePorts(d.svc)
	switch {
	case d.nodePortWhy != "":
		why := d.nodePortWhy
		nodePort.Args = func(string) ([]string, string) { return nil, why }
	case bench == 0 || web == 0:
		nodePort.Args = func(string) ([]string, string) { return nil, "the NodePort service was given no node ports" }
	case serverIP == "":
		why := "node " + d.server.Name + " has no " + f + " InternalIP"
		nodePort.Args = func(string) ([]string, string) { return nil, why }
	default:
		nodePort.Args = serviceArgs(serverIP, bench, web)
	}
	return []backend.Path{
		pod(PathSameNode, net.JoinHostPort(podIPOf(d.pods[podSrvA], f), port), d.client),
		pod(PathCrossNode, net.JoinHostPort(srvB, port), d.server),
		viaService(pod(PathPodToEndpoint, "", d.server), srvB, servicePort),
		viaService(pod(PathPodToService, "", d.server), svcIP, svcPort),
		viaService(backend.Path{Kind: PathHairpin + suffix, Client: place{d.ns, d.name(podSrvB)}, PathMTU: podMTU, PodMTU: podMTU,
			Labels: labels(d.server, d.server)}, svcIP, hairpinPort),
		nodePort,
	}
}

// pairsPath is the cross-node-pairs path of --pairs N (nil for one
// pair): pair 1 is the cross-node path's client and server, pair k its
// own client and server pods on its nodes.
func (d *Deployment) pairsPath(podMTU, nodeMTU int) *backend.Path {
	if len(d.pairs) < 2 {
		return nil
	}
	port := strconv.Itoa(engine.DefaultPort)
	var pp pairsPlace
	for i, p := range d.pairs {
		cli, srv := podCliA, podSrvB
		if i > 0 {
			cli, srv = pairPod("cli", i+1), pairPod("srv", i+1)
		}
		name := p.Client.Name + "→" + p.Server.Name
		if p.Reuse {
			name += " (again)"
		}
		pp.pairs = append(pp.pairs, pairPlace{place: place{d.ns, d.name(cli)}, target: net.JoinHostPort(podIPOf(d.pods[srv], families(d.b.o.IPFamily)[0]), port), name: name})
	}
	l := withMTU(nodeLabels(d.client, d.server), nodeMTU)
	l["pairs"] = strconv.Itoa(len(d.pairs))
	l["ip_family"] = families(d.b.o.IPFamily)[0]
	zones := map[string]bool{}
	for _, p := range d.pairs {
		zones[zoneLabel(p.Client)+"→"+zoneLabel(p.Server)] = true
	}
	if len(zones) > 1 {
		// The pairs span zone pairs: the first pair's zones do not name them.
		l["client_zone"], l["server_zone"] = "mixed", "mixed"
	}
	return &backend.Path{Kind: PathCrossNodePairs, Client: pp, Target: pp.pairs[0].target, PathMTU: podMTU, PodMTU: podMTU, Labels: l}
}

// serviceArgs are the client's flags for a server reached through a
// load-balanced address (a ClusterIP, or the endpoint itself for the
// reference path): session-less service mode, since a Service exposes
// only its ports, not the per-session data ports of `cnibench serve`.
func serviceArgs(ip string, bench, web int32) func(test string) ([]string, string) {
	return func(test string) ([]string, string) {
		switch test {
		case engine.TCPStream, engine.TCPRR, engine.TCPCRR:
			return []string{"--service", net.JoinHostPort(ip, strconv.Itoa(int(bench)))}, ""
		case engine.HTTP:
			return []string{"--url", "http://" + net.JoinHostPort(ip, strconv.Itoa(int(web))) + "/"}, ""
		}
		return nil, test + " has no session-less service mode: its flows use per-session ports, which a Service does not expose"
	}
}

// nodePorts are the node ports of the service's nodeport and http ports
// (0 if none).
func nodePorts(svc *corev1.Service) (bench, web int32) {
	for _, p := range svc.Spec.Ports {
		switch p.Name {
		case "nodeport":
			bench = p.NodePort
		case "http":
			web = p.NodePort
		}
	}
	return bench, web
}

// withMTU sets the "mtu" label to the node's MTU measured: the wire's, as
// the label means in the lab (whose cells set the wire MTU; a cluster's
// are given). The pod network's own MTU is each run's pod_mtu config, so
// that a run through a tunnel (pod MTU 1450) still pairs with the
// node-to-node baseline in compare --by datapath.
func withMTU(l map[string]string, mtu int) map[string]string {
	if mtu > 0 {
		l["mtu"] = strconv.Itoa(mtu)
	}
	return l
}

// Paths implements backend.Deployment.
func (d *Deployment) Paths(datapath string) []backend.Path {
	switch datapath {
	case DatapathBaseline:
		return d.baseline
	case d.cniName():
		return d.paths
	}
	return nil
}
