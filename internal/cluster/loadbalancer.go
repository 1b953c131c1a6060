package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/kube"
)

// PathPodToLoadBalancer is the client pod to the address a LoadBalancer
// service was given (--load-balancer): what traffic from inside the
// cluster to the service's external address takes (the CNI or kube-proxy
// may short-cut it to the endpoint; a cloud's load balancer may hairpin it
// out and back).
const PathPodToLoadBalancer = "pod-to-loadbalancer"

// lbPollInterval is how often the LoadBalancer service's address is
// looked for.
var lbPollInterval = 2 * time.Second

// loadBalancer creates the LoadBalancer service of --load-balancer and
// waits, at most LBTimeout, for the cluster to give it an address; what
// fails is lbWhy (the path is then skipped with it), never the run.
func (d *Deployment) loadBalancer(ctx context.Context, sel map[string]string) {
	b := d.b
	if !b.o.LoadBalancer {
		return
	}
	ports := []corev1.ServicePort{
		{Name: "bench", Port: svcPort, TargetPort: intstr.FromInt32(svcPort), Protocol: corev1.ProtocolTCP},
		{Name: "http", Port: httpPort, TargetPort: intstr.FromInt32(httpPort), Protocol: corev1.ProtocolTCP},
	}
	svc, err := kube.CreateService(ctx, b.cs, d.ns, d.runID, d.name("lb"), sel, ports, corev1.ServiceTypeLoadBalancer,
		withFamilies(families(b.o.IPFamily)[:1]))
	if err != nil {
		d.lbWhy = "the cluster refused a LoadBalancer service: " + firstLine(err.Error())
		return
	}
	d.lb = svc
	d.log.Info("waiting for the LoadBalancer service's address", "timeout", b.o.LBTimeout)
	var last *corev1.Service
	err = wait.PollUntilContextTimeout(ctx, lbPollInterval, b.o.LBTimeout, true, func(ctx context.Context) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := b.cs.CoreV1().Services(d.ns).Get(cctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // passing: look again until the timeout
		}
		last = s
		return lbAddress(s) != "", nil
	})
	if err != nil {
		d.lbWhy = fmt.Sprintf("the cluster gave the LoadBalancer service no address within %v (no load-balancer controller, or its quota)", b.o.LBTimeout)
		if last != nil && len(last.Status.Conditions) > 0 {
			c := last.Status.Conditions[len(last.Status.Conditions)-1]
			d.lbWhy += ": " + c.Reason + " " + c.Message
		}
		return
	}
	d.lbAddr = lbAddress(last)
	d.log.Info("LoadBalancer address", "address", d.lbAddr)
}

// lbAddress is a LoadBalancer service's first ingress address: its IP,
// else its host name (AWS's load balancers have names only); "" if none.
func lbAddress(s *corev1.Service) string {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}

// lbPath is the pod-to-loadbalancer path (nil without --load-balancer).
func (d *Deployment) lbPath(podMTU, nodeMTU int) *backend.Path {
	if !d.b.o.LoadBalancer {
		return nil
	}
	p := backend.Path{Kind: PathPodToLoadBalancer, Client: place{d.ns, d.name(podCliA)}, PathMTU: podMTU, PodMTU: podMTU,
		Labels: withMTU(nodeLabels(d.client, d.server), nodeMTU)}
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
