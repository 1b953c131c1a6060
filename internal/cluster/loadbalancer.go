package cluster

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/kube"
)

// PathPodToLoadBalancer is the client pod to the address a LoadBalancer
// service was given (--load-balancer): what traffic from inside the
// cluster to the service's external address takes (the CNI or kube-proxy
// may short-cut it to the endpoint; a cloud's load balancer may hairpin it
// out and back).
const PathPodToLoadBalancer = "pod-to-loadbalancer"

// PathExternalToLoadBalancer is the machine cnibench runs on, outside the
// cluster, to the same address (--load-balancer-external): north-south
// traffic, which enters the cluster through a node (or the cloud's load
// balancer) and is translated there to the endpoint, srv-b.
const PathExternalToLoadBalancer = "external-to-loadbalancer"

// externalNode is the client_node and client_zone label of a client
// outside the cluster.
const externalNode = "external"

// lbPollInterval is how often the LoadBalancer service's address is
// looked for.
var lbPollInterval = 2 * time.Second

// loadBalancer creates the LoadBalancer service of --load-balancer and
// waits, at most LBTimeout, for the cluster to give it an address; what
// fails is lbWhy (the path is then skipped with it), never the run. A
// service the preflight found refused (lbWhy set) is not created.
func (d *Deployment) loadBalancer(ctx context.Context) {
	b := d.b
	if !b.o.LoadBalancer || d.lbWhy != "" {
		return
	}
	svc, err := kube.CreateBuiltService(ctx, b.cs, d.lbServiceObj())
	if err != nil {
		d.lbWhy = "the cluster refused a LoadBalancer service: " + firstLine(err.Error())
		return
	}
	d.log.Info("waiting for the LoadBalancer service's address", "timeout", b.o.LBTimeout)
	addr, err := kube.WaitLoadBalancer(ctx, b.cs, d.ns, svc.Name, lbPollInterval, b.o.LBTimeout)
	if err != nil {
		d.lbWhy = firstLine(err.Error())
		return
	}
	d.lbAddr = addr
	d.log.Info("LoadBalancer address", "address", d.lbAddr)
}

// lbPath is the pod-to-loadbalancer path (nil without --load-balancer).
func (d *Deployment) lbPath(podMTU, nodeMTU int) *backend.Path {
	if !d.b.o.LoadBalancer {
		return nil
	}
	l := withMTU(nodeLabels(d.client, d.server), nodeMTU)
	l["ip_family"] = families(d.b.o.IPFamily)[0] // the service's one family (lbServiceObj)
	p := backend.Path{Kind: PathPodToLoadBalancer, Client: place{d.ns, d.name(podCliA)}, PathMTU: podMTU, PodMTU: podMTU,
		Labels: l}
	if why := d.lbWhy; why != "" || d.lbAddr == "" {
		if why == "" {
			why = "the LoadBalancer service has no address"
		}
		p.Args = func(string) ([]string, string) { return nil, why }
		return &p
	}
	p.Target = net.JoinHostPort(d.lbAddr, strconv.Itoa(svcPort))
	p.Args = serviceArgs(d.lbAddr, svcPort, httpPort)
	return &p
}

// lbExternalPath is the external-to-loadbalancer path (nil without
// --load-balancer-external): the pod path's target, its client on this
// machine (localPlace). The server node's facts label it; the client's
// node and zone are "external", and its MTU is unknown (the path crosses
// networks cnibench does not see).
func (d *Deployment) lbExternalPath(podMTU, nodeMTU int) *backend.Path {
	if !d.b.o.LBExternal {
		return nil
	}
	p := d.lbPath(podMTU, nodeMTU)
	if p == nil {
		return nil
	}
	l := nodeLabels(d.server, d.server)
	l["client_node"], l["client_zone"] = externalNode, externalNode
	l["ip_family"] = p.Labels["ip_family"]
	p.Kind, p.Client, p.Labels = PathExternalToLoadBalancer, localPlace{}, l
	p.PathMTU, p.PodMTU = 0, 0
	return p
}
