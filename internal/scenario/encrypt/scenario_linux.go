package encrypt

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/wireguard"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

// ErrNotSupported is wrapped by the skip reason of an implementation this
// machine cannot run.
var ErrNotSupported = internal.ErrNotSupported

// WGPort is the WireGuard nodes' UDP port.
const WGPort = 51820

// wgIface is the WireGuard device on each node.
const wgIface = "wg0"

type state struct {
	mu sync.Mutex
}

// probe says why a point cannot run here, or nil.
func probe(p point) error {
	switch p.enc {
	case None:
		return nil
	case WireGuard:
		return wireguard.ProbeKernel()
	case WireGuardUserspace:
		return wireguard.ProbeUserspace()
	case IPsec:
		return probeIPsecKernel(p.cipher)
	case IPsecUserspace:
		return probeIPsecUserspace(p.cipher)
	}
	return fmt.Errorf("unknown encryption %q", p.enc)
}

// Close implements scenario.Scenario: every point undoes itself.
func (s *Scenario) Close(context.Context) error { return nil }

// prepared is one mode set up between the lab's two nodes.
type prepared struct {
	p       point
	env     scenario.Env
	lab     *lab.Access
	metrics map[string]float64
	config  map[string]string
	undo    []func() error // in reverse order at Close
	proto   string         // what the capture must see of the tunnel ("udp/51820", "esp")
}

func (pr *prepared) Metrics() map[string]float64 { return pr.metrics }
func (pr *prepared) Config() map[string]string   { return pr.config }

// Close implements scenario.Prepared: routes, MTUs, tunnels undone.
func (pr *prepared) Close(context.Context) (map[string]float64, error) {
	var errs []error
	for i := len(pr.undo) - 1; i >= 0; i-- {
		errs = append(errs, pr.undo[i]())
	}
	pr.undo = nil
	return nil, errors.Join(errs...)
}

// Prepare implements scenario.Scenario: the tunnel between the nodes,
// the other node's pod CIDR routed into it, the pods' MTU lowered by the
// mode's overhead (pod_mtu=lowered) or left at the wire's.
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, sp scenario.Point) (scenario.Prepared, error) {
	p := pointOf(sp)
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	topo := lx.Topology
	if topo == nil || topo.Nodes[0] == nil || len(topo.Pods) == 0 {
		return nil, errors.New("encryption: needs a routed datapath (its nodes route each other's pod CIDR over the wire), e.g. veth-routing")
	}
	pr := &prepared{p: p, env: env, lab: lx, metrics: map[string]float64{}, config: map[string]string{"encryption": p.enc}}
	t0 := time.Now()
	var overhead int
	switch p.enc {
	case None:
		pr.config["encryption_impl"] = "none: pod traffic crosses the wire in clear"
	case WireGuardUserspace, WireGuard:
		overhead, err = pr.wireguard(ctx)
	case IPsec, IPsecUserspace:
		overhead, err = pr.ipsec(ctx)
	default:
		err = fmt.Errorf("unknown encryption %q", p.enc)
	}
	if err == nil && p.mtu == MTULowered {
		err = pr.lowerPodMTU(topo.PodMTU - overhead)
	}
	if err != nil {
		_, cerr := pr.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(err, cerr)
	}
	pr.metrics["encryption_setup_seconds"] = time.Since(t0).Seconds()
	if overhead > 0 {
		pr.metrics["encryption_overhead_bytes"] = float64(overhead)
	}
	return pr, nil
}

// wireguard starts a tunnel on each node and routes the other node's pod
// CIDR into it. It returns the per-packet overhead.
func (pr *prepared) wireguard(ctx context.Context) (int, error) {
	topo := pr.lab.Topology
	var keys [2][2]wireguard.Key // private, public per node
	for i := range keys {
		priv, pub, err := wireguard.GenerateKeyPair()
		if err != nil {
			return 0, err
		}
		keys[i] = [2]wireguard.Key{priv, pub}
	}
	overhead := wireguard.Overhead(false)
	for i, node := range topo.Nodes {
		other := 1 - i
		cfg := wireguard.Config{
			Iface: wgIface, PrivateKey: keys[i][0], PeerPublicKey: keys[other][1], ListenPort: WGPort,
			PeerEndpoint: netip.AddrPortFrom(lab.WireIPs[other], WGPort),
			AllowedIPs:   []netip.Prefix{lab.PodCIDRs[other]},
			MTU:          topo.PodMTU - overhead,
		}
		if pr.p.enc == WireGuard {
			if err := wireguard.SetupKernel(node.Do, cfg); err != nil {
				return 0, fmt.Errorf("kernel WireGuard on %s: %w", node.Name, err)
			}
			pr.undo = append(pr.undo, func() error { return wireguard.DeleteKernel(node.Do, wgIface) })
		} else {
			if pr.env.Start == nil {
				return 0, errors.New("encryption: no way to start the userspace tunnel (not run by the suite)")
			}
			js, err := wireguard.EncodeConfig(cfg)
			if err != nil {
				return 0, err
			}
			srv, err := pr.env.Start(ctx, node, js, "wg-node")
			if err != nil {
				return 0, fmt.Errorf("start wireguard-go on %s: %w", node.Name, err)
			}
			pr.undo = append(pr.undo, func() error { srv.Stop(); return nil })
		}
		route, err := wireguard.RoutePods(node.Handle(), wgIface, lab.PodCIDRs[other])
		if err != nil {
			return 0, fmt.Errorf("route %v into %s on %s: %w", lab.PodCIDRs[other], wgIface, node.Name, err)
		}
		pr.undo = append(pr.undo, route.Restore)
	}
	pr.proto = fmt.Sprintf("udp/%d", WGPort)
	impl := "kernel WireGuard (wgctrl)"
	if pr.p.enc == WireGuardUserspace {
		impl = "wireguard-go " + wireguard.UserspaceVersion() + " in userspace (cnibench wg-node, one process per node, TUN device)"
	}
	pr.config["encryption_impl"] = impl + ", ChaCha20-Poly1305, per-run keys"
	return overhead, nil
}

// lowerPodMTU sets every pod's interface and its node-side veth to mtu,
// and restores the wire MTU at Close.
func (pr *prepared) lowerPodMTU(mtu int) error {
	topo := pr.lab.Topology
	set := func(to int) error {
		var errs []error
		for _, pod := range topo.Pods {
			errs = append(errs, setMTU(pod.NS, lab.PodIf, to))
			if pod.HostDev != "" {
				errs = append(errs, setMTU(topo.Nodes[pod.Node], pod.HostDev, to))
			}
		}
		return errors.Join(errs...)
	}
	pr.undo = append(pr.undo, func() error { return set(topo.PodMTU) })
	pr.config["pod_mtu_bytes"] = fmt.Sprint(mtu)
	return set(mtu)
}

func setMTU(ns *lab.NS, dev string, mtu int) error {
	l, err := ns.Handle().LinkByName(dev)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", dev, ns.Name, err)
	}
	if err := ns.Handle().LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("set MTU %d on %s in %s: %w", mtu, dev, ns.Name, err)
	}
	return nil
}
