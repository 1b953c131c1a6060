package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/nslb"
)

// L4LB is the l4lb lab's load balancer: its namespaces, and the BPF
// programs and VXLAN devices of the current mode. Get it with L4LBOf or
// (*L4LBDatapath).L4LB. Its methods are safe for concurrent use.
type L4LB struct {
	wireMTU int
	logger  *slog.Logger

	// Built once by Setup; never changed afterwards.
	sw, client, clientFW, lbNode *NS
	workers                      [2]*NS
	backends                     [2]*NS

	mu     sync.Mutex
	mode   L4LBMode
	active bool // the mode's programs are loaded and attached
	closed bool
	lb     *nslb.LB
	wk     [2]*nslb.Worker // dsr only
	// kpFWBase is the kubeproxy firewall's drops counted before its rule
	// was last replaced (a firewall flip).
	kpFWBase uint64
	// cpus is the receive-processing placement (SetCPUSplit), applied
	// again after every Configure (a new VXLAN device starts without it).
	cpus L4LBCPUSplit
}

// Client is the benchmark client's namespace (L4LBClientIP).
func (l *L4LB) Client() *NS { return l.client }

// ClientFW is the second external client's namespace (L4LBClientFWIP),
// whose prefix the firewall refuses.
func (l *L4LB) ClientFW() *NS { return l.clientFW }

// LBNode is the load-balancer node's namespace (L4LBNodeIP).
func (l *L4LB) LBNode() *NS { return l.lbNode }

// Switch is the namespace of the external segment's bridge.
func (l *L4LB) Switch() *NS { return l.sw }

// Workers are the workers' namespaces (L4LBWorkerIPs).
func (l *L4LB) Workers() [2]*NS { return l.workers }

// Backends are the backend pods: backend i on worker i (Pod.Node), with
// its address (L4LBBackendIPs) and the worker-side interface of its veth.
func (l *L4LB) Backends() []Pod {
	out := make([]Pod, len(l.backends))
	for i, ns := range l.backends {
		out[i] = Pod{Role: L4LBBackendRoles[i], Node: i, NS: ns, IP: L4LBBackendIPs[i], HostDev: "veth-" + L4LBBackendRoles[i]}
	}
	return out
}

// VIP is the service address (IPv4; the lab has no IPv6, see
// L4LBMode.Validate).
func (l *L4LB) VIP() netip.Addr { return L4LBVIP }

// Services are the VIP:port pairs the load balancer serves (TCP), each
// to the same port on every backend.
func (l *L4LB) Services() []netip.AddrPort {
	out := make([]netip.AddrPort, len(L4LBPorts))
	for i, p := range L4LBPorts {
		out[i] = netip.AddrPortFrom(L4LBVIP, p)
	}
	return out
}

// Mode is the current mode (the zero mode when none is configured: after a
// failed Configure).
func (l *L4LB) Mode() L4LBMode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode
}

// Configure switches the load balancer to mode m without rebuilding the
// namespaces. A change of m.Firewall alone flips the firewall in the
// running programs (counters kept); a change of LB mode or transport
// releases the previous mode's programs and VXLAN devices and sets up the
// new ones (counters start from 0, connection tables empty: connections
// made before do not survive it).
func (l *L4LB) Configure(ctx context.Context, m L4LBMode) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("configure l4lb: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("configure l4lb: the lab is torn down")
	}
	if l.active && m.LB == l.mode.LB && m.Transport == l.mode.Transport {
		if err := l.setFirewall(m.Firewall); err != nil {
			return fmt.Errorf("configure l4lb %v: %w", m, err)
		}
		l.mode = m
		return nil
	}
	prev := l.mode
	// From here until apply succeeds, nothing is configured.
	l.mode = L4LBMode{}
	if err := l.release(); err != nil {
		return fmt.Errorf("configure l4lb %v: release %v: %w", m, prev, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("configure l4lb %v: %w", m, err)
	}
	if err := l.apply(m); err != nil {
		if errors.Is(err, nslb.ErrNotSupported) {
			err = &UnsupportedError{Feature: "BPF L4 load balancer", Reason: err.Error()}
		}
		return errors.Join(fmt.Errorf("configure l4lb %v: %w", m, err), l.release())
	}
	if err := l.applyRPS(); err != nil {
		return errors.Join(fmt.Errorf("configure l4lb %v: %w", m, err), l.release())
	}
	l.mode, l.active = m, true
	l.logger.Debug("l4lb configured", "mode", m.String())
	return nil
}

// apply sets up mode m from nothing (the caller released the previous one).
func (l *L4LB) apply(m L4LBMode) error {
	if m.LB == L4LBKubeProxy {
		return l.applyKubeProxy(m)
	}
	tunnel, dsr := m.Transport == L4LBVXLAN, m.LB == L4LBDSR
	if tunnel {
		if err := l.addTunnels(true); err != nil {
			return err
		}
	}
	ext, err := ifindex(l.lbNode, l4lbExtIf)
	if err != nil {
		return err
	}
	cfg := nslb.LBConfig{
		Services: l.lbServices(), DSR: dsr, ExtIfindex: ext,
		// In snat the workers see only the LB's address: the policy on the
		// clients' addresses applies at the LB's ingress (see L4LBMode).
		Firewall: m.Firewall && !dsr, Allow: l4lbAllowPrefixes,
	}
	if !dsr {
		cfg.SNATAddr = L4LBNodeIP
		if tunnel {
			cfg.SNATAddr = L4LBTunnelIP
		}
	}
	if tunnel {
		idx, err := ifindex(l.lbNode, VXLANIf)
		if err != nil {
			return err
		}
		cfg.Tunnel = &nslb.Tunnel{Ifindex: idx, VNI: L4LBVNI, MAC: l4lbTunMACs[0]}
	}
	if l.lb, err = nslb.LoadLB(cfg); err != nil {
		return fmt.Errorf("load the LB's programs: %w", err)
	}
	if err := l.lb.Attach(l.lbNode.Do); err != nil {
		return fmt.Errorf("attach the LB's programs in %s: %w", l.lbNode.Name, err)
	}
	if !dsr {
		return nil
	}
	for i, w := range l.workers {
		fromLB := l4lbExtIf
		if tunnel {
			fromLB = VXLANIf
		}
		in, err := ifindex(w, fromLB)
		if err != nil {
			return err
		}
		pod, err := ifindex(w, "veth-"+L4LBBackendRoles[i])
		if err != nil {
			return err
		}
		var svcs []nslb.LocalService
		for _, p := range L4LBPorts {
			svcs = append(svcs, nslb.LocalService{
				VIP: netip.AddrPortFrom(L4LBVIP, p), Proto: nslb.TCP, Backend: netip.AddrPortFrom(L4LBBackendIPs[i], p),
			})
		}
		if l.wk[i], err = nslb.LoadWorker(nslb.WorkerConfig{Services: svcs, Firewall: m.Firewall, Allow: l4lbAllowPrefixes}); err != nil {
			return fmt.Errorf("load %s's programs: %w", w.Name, err)
		}
		if err := l.wk[i].Attach(w.Do, in, []int{pod}); err != nil {
			return fmt.Errorf("attach %s's programs: %w", w.Name, err)
		}
	}
	return nil
}

// lbServices are the VIP's ports, each to both backends.
func (l *L4LB) lbServices() []nslb.Service {
	var out []nslb.Service
	for _, p := range L4LBPorts {
		s := nslb.Service{VIP: netip.AddrPortFrom(L4LBVIP, p), Proto: nslb.TCP}
		for i := range l.backends {
			s.Backends = append(s.Backends, nslb.Backend{
				Addr: netip.AddrPortFrom(L4LBBackendIPs[i], p), Node: L4LBWorkerIPs[i], NodeMAC: l4lbTunMACs[i+1],
			})
		}
		out = append(out, s)
	}
	return out
}

// addTunnels creates the VXLAN devices: on the LB an external
// (collect_md) one, whose remote end the program picks per packet with a
// tunnel key, as Cilium does (external; otherwise, for the LB's stack in
// kubeproxy, a plain one with a forwarding entry and a static neighbour
// per worker); on each worker a plain one towards the LB,
// with the LB's tunnel address resolved statically (the LB's
// collect_md device could not send an ARP reply: it has no remote without
// a tunnel key). Its /24 routes the backends' replies to the LB's tunnel
// address (snat) back through the tunnel.
func (l *L4LB) addTunnels(external bool) error {
	lbvx := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: VXLANIf, MTU: l.wireMTU, HardwareAddr: l4lbTunMACs[0]},
		FlowBased: true, Port: vxlanPort,
	}
	lbAddr := host32(L4LBTunnelIP)
	if !external {
		ext, err := ifindex(l.lbNode, l4lbExtIf)
		if err != nil {
			return err
		}
		lbvx.FlowBased, lbvx.VxlanId, lbvx.VtepDevIndex, lbvx.SrcAddr = false, L4LBVNI, ext, net.IP(L4LBNodeIP.AsSlice())
		lbAddr = netip.PrefixFrom(L4LBTunnelIP, L4LBTunnelNet.Bits())
	}
	if err := l.lbNode.handle.LinkAdd(lbvx); err != nil {
		return fmt.Errorf("create vxlan %s (external %v) in %s: %w", VXLANIf, external, l.lbNode.Name, err)
	}
	if err := addrAdd(l.lbNode, VXLANIf, lbAddr); err != nil {
		return err
	}
	if err := linkUp(l.lbNode, VXLANIf); err != nil {
		return err
	}
	if !external {
		if err := l.lbTunnelPeers(); err != nil {
			return err
		}
	}
	for i, w := range l.workers {
		ext, err := ifindex(w, l4lbExtIf)
		if err != nil {
			return err
		}
		vx := &netlink.Vxlan{
			LinkAttrs:    netlink.LinkAttrs{Name: VXLANIf, MTU: l.wireMTU, HardwareAddr: l4lbTunMACs[i+1]},
			VxlanId:      L4LBVNI,
			VtepDevIndex: ext,
			SrcAddr:      net.IP(L4LBWorkerIPs[i].AsSlice()),
			Group:        net.IP(L4LBNodeIP.AsSlice()), // unicast: the LB
			Port:         vxlanPort,
		}
		if err := w.handle.LinkAdd(vx); err != nil {
			return fmt.Errorf("create vxlan %s in %s: %w", VXLANIf, w.Name, err)
		}
		if err := addrAdd(w, VXLANIf, netip.PrefixFrom(L4LBWorkerTunIPs[i], L4LBTunnelNet.Bits())); err != nil {
			return err
		}
		if err := linkUp(w, VXLANIf); err != nil {
			return err
		}
		idx, err := ifindex(w, VXLANIf)
		if err != nil {
			return err
		}
		n := &netlink.Neigh{
			LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IP(L4LBTunnelIP.AsSlice()), HardwareAddr: l4lbTunMACs[0],
		}
		if err := w.handle.NeighSet(n); err != nil {
			return fmt.Errorf("static neighbour %v on %s in %s: %w", L4LBTunnelIP, VXLANIf, w.Name, err)
		}
	}
	return nil
}

// setFirewall flips the firewall where the current mode enforces it.
func (l *L4LB) setFirewall(on bool) error {
	if l.mode.LB == L4LBKubeProxy {
		return l.setKubeProxyFirewall(on)
	}
	if l.mode.LB == L4LBSNAT {
		return l.lb.SetFirewall(on)
	}
	var errs []error
	for _, w := range l.wk {
		errs = append(errs, w.SetFirewall(on))
	}
	return errors.Join(errs...)
}

// release closes the current mode's programs and deletes its VXLAN
// devices (with their addresses, routes and neighbours).
func (l *L4LB) release() error {
	errs := l.closeBPF()
	if l.lbNode != nil {
		errs = append(errs, l.releaseKubeProxy())
	}
	for _, ns := range []*NS{l.lbNode, l.workers[0], l.workers[1]} {
		if ns == nil {
			continue
		}
		lk, err := ns.handle.LinkByName(VXLANIf)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if !errors.As(err, &nf) {
				errs = append(errs, fmt.Errorf("find %s in %s: %w", VXLANIf, ns.Name, err))
			}
			continue
		}
		if err := ns.handle.LinkDel(lk); err != nil {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", VXLANIf, ns.Name, err))
		}
	}
	return errors.Join(errs...)
}

// closeBPF detaches and frees the programs of the current mode.
func (l *L4LB) closeBPF() []error {
	var errs []error
	if l.lb != nil {
		errs = append(errs, l.lb.Close())
		l.lb = nil
	}
	for i, w := range l.wk {
		if w != nil {
			errs = append(errs, w.Close())
			l.wk[i] = nil
		}
	}
	l.active = false
	return errs
}

// close frees the BPF programs for good (Teardown); the namespaces take
// the devices with them.
func (l *L4LB) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return errors.Join(l.closeBPF()...)
}

// Counters reads the counters of the current mode's programs.
func (l *L4LB) Counters() (LBCounters, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return LBCounters{}, errors.New("l4lb counters: no mode configured")
	}
	if l.mode.LB == L4LBKubeProxy {
		return l.kubeProxyCounters()
	}
	c, err := l.lb.Counters()
	if err != nil {
		return LBCounters{}, err
	}
	out := LBCounters{
		Forward: c.Forward, Reverse: c.Reverse, NewFlows: c.New, NoBackend: c.NoBackend,
		SNATFailures: c.SNATFailures, FirewallDrops: c.FirewallDrops,
	}
	for _, w := range l.wk {
		if w == nil {
			continue
		}
		wc, err := w.Counters()
		if err != nil {
			return LBCounters{}, err
		}
		out.WorkerDNAT += wc.DNAT
		out.WorkerRevNAT += wc.RevNAT
		out.FirewallDrops += wc.FirewallDrops
	}
	return out, nil
}

// FirewallDrops is the firewall's drop count in the current mode, wherever
// it is enforced (LB in snat and kubeproxy, workers in dsr).
func (l *L4LB) FirewallDrops() (uint64, error) {
	c, err := l.Counters()
	return c.FirewallDrops, err
}

// LBFirewallDropsByCPU is the LB program's firewall drop count per CPU,
// indexed by CPU number: where the LB node's receive processing ran for
// the packets it dropped, unmixed with any other traffic on the machine.
// Only the eBPF LB in snat mode enforces its firewall on the LB node.
func (l *L4LB) LBFirewallDropsByCPU() ([]uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active || l.mode.LB != L4LBSNAT {
		return nil, fmt.Errorf("l4lb firewall drops by CPU: mode %s: %w: the LB node's per-CPU drops are counted only by the eBPF LB in snat mode", l.mode, ErrNotSupported)
	}
	return l.lb.FirewallDropsByCPU()
}

func ifindex(ns *NS, name string) (int, error) {
	lk, err := ns.handle.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("find %s in %s: %w", name, ns.Name, err)
	}
	return lk.Attrs().Index, nil
}

// lbTunnelPeers gives the LB's plain VXLAN device a forwarding entry
// (worker's MAC -> worker's address) and a static neighbour (worker's
// tunnel address -> its MAC) per worker.
func (l *L4LB) lbTunnelPeers() error {
	idx, err := ifindex(l.lbNode, VXLANIf)
	if err != nil {
		return err
	}
	for i := range l.workers {
		fdb := &netlink.Neigh{
			LinkIndex: idx, Family: unix.AF_BRIDGE, Flags: netlink.NTF_SELF, State: netlink.NUD_PERMANENT,
			IP: net.IP(L4LBWorkerIPs[i].AsSlice()), HardwareAddr: l4lbTunMACs[i+1],
		}
		if err := l.lbNode.handle.NeighAppend(fdb); err != nil {
			return fmt.Errorf("vxlan forwarding entry for %s in %s: %w", L4LBWorkerRoles[i], l.lbNode.Name, err)
		}
		n := &netlink.Neigh{
			LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IP(L4LBWorkerTunIPs[i].AsSlice()), HardwareAddr: l4lbTunMACs[i+1],
		}
		if err := l.lbNode.handle.NeighSet(n); err != nil {
			return fmt.Errorf("static neighbour %v on %s in %s: %w", L4LBWorkerTunIPs[i], VXLANIf, l.lbNode.Name, err)
		}
	}
	return nil
}
