package lbnet

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
	"github.com/cnibench/cnibench/internal/lab"
)

// LB is the l4lb lab's load balancer: its namespaces, and the BPF
// programs and VXLAN devices of the current mode. Get it with Of or
// (*Datapath).LB. Its methods are safe for concurrent use.
type LB struct {
	wireMTU int
	logger  *slog.Logger

	// Built once by Setup; never changed afterwards.
	sw, client, clientFW, lbNode *lab.NS
	workers                      [2]*lab.NS
	backends                     [2]*lab.NS

	mu     sync.Mutex
	mode   Mode
	active bool // the mode's programs are loaded and attached
	closed bool
	lb     *nslb.LB
	wk     [2]*nslb.Worker // dsr only
	// kpFWBase is the kubeproxy firewall's drops counted before its rule
	// was last replaced (a firewall flip).
	kpFWBase uint64
	// cpus is the receive-processing placement (SetCPUSplit), applied
	// again after every Configure (a new VXLAN device starts without it).
	cpus CPUSplit
}

// Client is the benchmark client's namespace (ClientIP).
func (l *LB) Client() *lab.NS { return l.client }

// ClientFW is the second external client's namespace (ClientFWIP),
// whose prefix the firewall refuses.
func (l *LB) ClientFW() *lab.NS { return l.clientFW }

// LBNode is the load-balancer node's namespace (NodeIP).
func (l *LB) LBNode() *lab.NS { return l.lbNode }

// Switch is the namespace of the external segment's bridge.
func (l *LB) Switch() *lab.NS { return l.sw }

// Workers are the workers' namespaces (WorkerIPs).
func (l *LB) Workers() [2]*lab.NS { return l.workers }

// Backends are the backend pods: backend i on worker i (Pod.Node), with
// its address (BackendIPs) and the worker-side interface of its veth.
func (l *LB) Backends() []lab.Pod {
	out := make([]lab.Pod, len(l.backends))
	for i, ns := range l.backends {
		out[i] = lab.Pod{Role: BackendRoles[i], Node: i, NS: ns, IP: BackendIPs[i], HostDev: "veth-" + BackendRoles[i]}
	}
	return out
}

// VIP is the service address (IPv4; the lab has no IPv6, see
// Mode.Validate).
func (l *LB) VIP() netip.Addr { return VIP }

// Services are the VIP:port pairs the load balancer serves (TCP), each
// to the same port on every backend.
func (l *LB) Services() []netip.AddrPort {
	out := make([]netip.AddrPort, len(Ports))
	for i, p := range Ports {
		out[i] = netip.AddrPortFrom(VIP, p)
	}
	return out
}

// Mode is the current mode (the zero mode when none is configured: after a
// failed Configure).
func (l *LB) Mode() Mode {
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
func (l *LB) Configure(ctx context.Context, m Mode) error {
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
	l.mode = Mode{}
	if err := l.release(); err != nil {
		return fmt.Errorf("configure l4lb %v: release %v: %w", m, prev, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("configure l4lb %v: %w", m, err)
	}
	if err := l.apply(m); err != nil {
		if errors.Is(err, nslb.ErrNotSupported) {
			err = &lab.UnsupportedError{Feature: "BPF L4 load balancer", Reason: err.Error()}
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
func (l *LB) apply(m Mode) error {
	if m.LB == KubeProxy {
		return l.applyKubeProxy(m)
	}
	tunnel, dsr := m.Transport == VXLAN, m.LB == DSR
	if tunnel {
		if err := l.addTunnels(true); err != nil {
			return err
		}
	}
	ext, err := ifindex(l.lbNode, extIf)
	if err != nil {
		return err
	}
	cfg := nslb.LBConfig{
		Services: l.lbServices(), DSR: dsr, ExtIfindex: ext,
		// In snat the workers see only the LB's address: the policy on the
		// clients' addresses applies at the LB's ingress (see Mode).
		Firewall: m.Firewall && !dsr, Allow: allowPrefixes,
	}
	if !dsr {
		cfg.SNATAddr = NodeIP
		if tunnel {
			cfg.SNATAddr = TunnelIP
		}
	}
	if tunnel {
		idx, err := ifindex(l.lbNode, lab.VXLANIf)
		if err != nil {
			return err
		}
		cfg.Tunnel = &nslb.Tunnel{Ifindex: idx, VNI: VNI, MAC: tunMACs[0]}
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
		fromLB := extIf
		if tunnel {
			fromLB = lab.VXLANIf
		}
		in, err := ifindex(w, fromLB)
		if err != nil {
			return err
		}
		pod, err := ifindex(w, "veth-"+BackendRoles[i])
		if err != nil {
			return err
		}
		var svcs []nslb.LocalService
		for _, p := range Ports {
			svcs = append(svcs, nslb.LocalService{
				VIP: netip.AddrPortFrom(VIP, p), Proto: nslb.TCP, Backend: netip.AddrPortFrom(BackendIPs[i], p),
			})
		}
		if l.wk[i], err = nslb.LoadWorker(nslb.WorkerConfig{Services: svcs, Firewall: m.Firewall, Allow: allowPrefixes}); err != nil {
			return fmt.Errorf("load %s's programs: %w", w.Name, err)
		}
		if err := l.wk[i].Attach(w.Do, in, []int{pod}); err != nil {
			return fmt.Errorf("attach %s's programs: %w", w.Name, err)
		}
	}
	return nil
}

// lbServices are the VIP's ports, each to both backends.
func (l *LB) lbServices() []nslb.Service {
	var out []nslb.Service
	for _, p := range Ports {
		s := nslb.Service{VIP: netip.AddrPortFrom(VIP, p), Proto: nslb.TCP}
		for i := range l.backends {
			s.Backends = append(s.Backends, nslb.Backend{
				Addr: netip.AddrPortFrom(BackendIPs[i], p), Node: WorkerIPs[i], NodeMAC: tunMACs[i+1],
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
func (l *LB) addTunnels(external bool) error {
	lbvx := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: lab.VXLANIf, MTU: l.wireMTU, HardwareAddr: tunMACs[0]},
		FlowBased: true, Port: lab.VXLANPort,
	}
	lbAddr := lab.Host32(TunnelIP)
	if !external {
		ext, err := ifindex(l.lbNode, extIf)
		if err != nil {
			return err
		}
		lbvx.FlowBased, lbvx.VxlanId, lbvx.VtepDevIndex, lbvx.SrcAddr = false, VNI, ext, net.IP(NodeIP.AsSlice())
		lbAddr = netip.PrefixFrom(TunnelIP, TunnelNet.Bits())
	}
	if err := l.lbNode.Handle().LinkAdd(lbvx); err != nil {
		return fmt.Errorf("create vxlan %s (external %v) in %s: %w", lab.VXLANIf, external, l.lbNode.Name, err)
	}
	if err := l.lbNode.AddrAdd(lab.VXLANIf, lbAddr); err != nil {
		return err
	}
	if err := l.lbNode.LinkUp(lab.VXLANIf); err != nil {
		return err
	}
	if !external {
		if err := l.lbTunnelPeers(); err != nil {
			return err
		}
	}
	for i, w := range l.workers {
		ext, err := ifindex(w, extIf)
		if err != nil {
			return err
		}
		vx := &netlink.Vxlan{
			LinkAttrs:    netlink.LinkAttrs{Name: lab.VXLANIf, MTU: l.wireMTU, HardwareAddr: tunMACs[i+1]},
			VxlanId:      VNI,
			VtepDevIndex: ext,
			SrcAddr:      net.IP(WorkerIPs[i].AsSlice()),
			Group:        net.IP(NodeIP.AsSlice()), // unicast: the LB
			Port:         lab.VXLANPort,
		}
		if err := w.Handle().LinkAdd(vx); err != nil {
			return fmt.Errorf("create vxlan %s in %s: %w", lab.VXLANIf, w.Name, err)
		}
		if err := w.AddrAdd(lab.VXLANIf, netip.PrefixFrom(WorkerTunIPs[i], TunnelNet.Bits())); err != nil {
			return err
		}
		if err := w.LinkUp(lab.VXLANIf); err != nil {
			return err
		}
		idx, err := ifindex(w, lab.VXLANIf)
		if err != nil {
			return err
		}
		n := &netlink.Neigh{
			LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IP(TunnelIP.AsSlice()), HardwareAddr: tunMACs[0],
		}
		if err := w.Handle().NeighSet(n); err != nil {
			return fmt.Errorf("static neighbour %v on %s in %s: %w", TunnelIP, lab.VXLANIf, w.Name, err)
		}
	}
	return nil
}

// setFirewall flips the firewall where the current mode enforces it.
func (l *LB) setFirewall(on bool) error {
	if l.mode.LB == KubeProxy {
		return l.setKubeProxyFirewall(on)
	}
	if l.mode.LB == SNAT {
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
func (l *LB) release() error {
	errs := l.closeBPF()
	if l.lbNode != nil {
		errs = append(errs, l.releaseKubeProxy())
	}
	for _, ns := range []*lab.NS{l.lbNode, l.workers[0], l.workers[1]} {
		if ns == nil {
			continue
		}
		lk, err := ns.Handle().LinkByName(lab.VXLANIf)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if !errors.As(err, &nf) {
				errs = append(errs, fmt.Errorf("find %s in %s: %w", lab.VXLANIf, ns.Name, err))
			}
			continue
		}
		if err := ns.Handle().LinkDel(lk); err != nil {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", lab.VXLANIf, ns.Name, err))
		}
	}
	return errors.Join(errs...)
}

// closeBPF detaches and frees the programs of the current mode.
func (l *LB) closeBPF() []error {
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
func (l *LB) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return errors.Join(l.closeBPF()...)
}

// Counters reads the counters of the current mode's programs.
func (l *LB) Counters() (Counters, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return Counters{}, errors.New("l4lb counters: no mode configured")
	}
	if l.mode.LB == KubeProxy {
		return l.kubeProxyCounters()
	}
	c, err := l.lb.Counters()
	if err != nil {
		return Counters{}, err
	}
	out := Counters{
		Forward: c.Forward, Reverse: c.Reverse, NewFlows: c.New, NoBackend: c.NoBackend,
		SNATFailures: c.SNATFailures, FirewallDrops: c.FirewallDrops,
	}
	for _, w := range l.wk {
		if w == nil {
			continue
		}
		wc, err := w.Counters()
		if err != nil {
			return Counters{}, err
		}
		out.WorkerDNAT += wc.DNAT
		out.WorkerRevNAT += wc.RevNAT
		out.FirewallDrops += wc.FirewallDrops
	}
	return out, nil
}

// FirewallDrops is the firewall's drop count in the current mode, wherever
// it is enforced (LB in snat and kubeproxy, workers in dsr).
func (l *LB) FirewallDrops() (uint64, error) {
	c, err := l.Counters()
	return c.FirewallDrops, err
}

// LBFirewallDropsByCPU is the LB program's firewall drop count per CPU,
// indexed by CPU number: where the LB node's receive processing ran for
// the packets it dropped, unmixed with any other traffic on the machine.
// Only the eBPF LB in snat mode enforces its firewall on the LB node.
func (l *LB) LBFirewallDropsByCPU() ([]uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active || l.mode.LB != SNAT {
		return nil, fmt.Errorf("l4lb firewall drops by CPU: mode %s: %w: the LB node's per-CPU drops are counted only by the eBPF LB in snat mode", l.mode, lab.ErrNotSupported)
	}
	return l.lb.FirewallDropsByCPU()
}

func ifindex(ns *lab.NS, name string) (int, error) {
	lk, err := ns.Handle().LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("find %s in %s: %w", name, ns.Name, err)
	}
	return lk.Attrs().Index, nil
}

// lbTunnelPeers gives the LB's plain VXLAN device a forwarding entry
// (worker's MAC -> worker's address) and a static neighbour (worker's
// tunnel address -> its MAC) per worker.
func (l *LB) lbTunnelPeers() error {
	idx, err := ifindex(l.lbNode, lab.VXLANIf)
	if err != nil {
		return err
	}
	for i := range l.workers {
		fdb := &netlink.Neigh{
			LinkIndex: idx, Family: unix.AF_BRIDGE, Flags: netlink.NTF_SELF, State: netlink.NUD_PERMANENT,
			IP: net.IP(WorkerIPs[i].AsSlice()), HardwareAddr: tunMACs[i+1],
		}
		if err := l.lbNode.Handle().NeighAppend(fdb); err != nil {
			return fmt.Errorf("vxlan forwarding entry for %s in %s: %w", WorkerRoles[i], l.lbNode.Name, err)
		}
		n := &netlink.Neigh{
			LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IP(WorkerTunIPs[i].AsSlice()), HardwareAddr: tunMACs[i+1],
		}
		if err := l.lbNode.Handle().NeighSet(n); err != nil {
			return fmt.Errorf("static neighbour %v on %s in %s: %w", WorkerTunIPs[i], lab.VXLANIf, l.lbNode.Name, err)
		}
	}
	return nil
}
