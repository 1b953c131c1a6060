package lbnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/bpf/nslb"
	"github.com/cnibench/cnibench/internal/lab"
)

func init() {
	lab.RegisterHidden(func() lab.Datapath { return &Datapath{} })
}

// Interface names of the l4lb lab.
const (
	extIf    = "ext0" // every member's interface on the external segment
	bridgeIf = "br0"  // the external segment (in the switch namespace)
)

// tunMACs are the VXLAN devices' MACs, fixed so that the LB can
// address a worker's device in the inner frame without learning it: the
// LB's, then worker1's and worker2's.
var tunMACs = [3]net.HardwareAddr{
	{0x02, 0xcb, 0x4c, 0x42, 0x00, 0x01},
	{0x02, 0xcb, 0x4c, 0x42, 0x00, 0x0b},
	{0x02, 0xcb, 0x4c, 0x42, 0x00, 0x0c},
}

// Datapath is the hidden "l4lb" datapath: the namespaces of the L4
// load-balancer lab. LB returns the handle to configure and observe it.
type Datapath struct {
	lb *LB
}

func (*Datapath) Name() string { return DatapathName }

func (*Datapath) Description() string {
	return "north-south L4 load balancer (seed 003): external clients, a BPF (TCX) LB node with Maglev, " +
		"snat or dsr, direct or vxlan to two workers, BPF host firewall; a scenario's topology, not a matrix cell"
}

// PacketPath describes the current mode's path (the default mode before
// Setup).
func (d *Datapath) PacketPath() string {
	if d.lb != nil {
		if m := d.lb.Mode(); m.LB != "" {
			return m.PacketPath()
		}
	}
	return defaultMode.PacketPath()
}

// OwnedByProcess: the TCX links live as long as this process's file
// descriptors.
func (*Datapath) OwnedByProcess() bool { return true }

// LB returns the lab's load balancer (nil before Setup).
func (d *Datapath) LB() *LB { return d.lb }

// Of returns the load balancer of a lab built with the l4lb datapath.
func Of(l *lab.Lab) (*LB, error) {
	dp, _, err := l.Datapath(DatapathName)
	if err != nil {
		return nil, err
	}
	d, ok := dp.(*Datapath)
	if !ok || d.lb == nil {
		return nil, fmt.Errorf("datapath %s has no load balancer", DatapathName)
	}
	return d.lb, nil
}

func (*Datapath) Probe() error {
	for _, p := range []struct {
		what string
		l    netlink.Link
	}{
		{"veth pair", &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}},
		{"Linux bridge", &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "probe2"}}},
		{"VXLAN device (external)", &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "probe3"}, FlowBased: true, Port: lab.VXLANPort}},
	} {
		if err := lab.ProbeLink(p.what, p.l); err != nil {
			return err
		}
	}
	if err := nslb.Probe(); err != nil {
		if errors.Is(err, nslb.ErrNotSupported) {
			return &lab.UnsupportedError{Feature: "BPF L4 load balancer", Reason: err.Error()}
		}
		return fmt.Errorf("probe BPF L4 load balancer: %w", err)
	}
	return nil
}

// Setup builds the namespaces, the external segment, the backend pods and
// the routes, then configures the default mode (snat, direct, firewall
// off).
func (d *Datapath) Setup(ctx context.Context, env *lab.Env) (*lab.Topology, error) {
	lb := &LB{wireMTU: env.WireMTU, logger: env.Logger}
	d.lb = lb
	if err := lb.build(ctx, env); err != nil {
		return nil, err
	}
	if err := lb.Configure(ctx, defaultMode); err != nil {
		return nil, err
	}
	// No Paths: the client reaches the backends through the VIP, which no
	// single server namespace owns; a scenario uses the LB's accessors.
	return &lab.Topology{PodMTU: env.WireMTU, PathMTU: env.WireMTU, Nodes: lb.workers, Pods: lb.Backends()}, nil
}

// Teardown releases the BPF programs; the lab deletes the namespaces (and
// with them every device and route).
func (d *Datapath) Teardown(context.Context) error {
	if d.lb == nil {
		return nil
	}
	return d.lb.close()
}

var defaultMode = Mode{LB: SNAT, Transport: Direct}

// build creates the lab's namespaces and wiring (no BPF yet).
func (l *LB) build(ctx context.Context, env *lab.Env) error {
	newNS := func(role string, sysctls ...[2]string) (*lab.NS, error) {
		ns, err := env.NewNS(ctx, role)
		if err != nil {
			return nil, err
		}
		// Before any device exists: devices take conf/default's values.
		if err := ns.WriteSysctls(sysctls...); err != nil {
			return nil, err
		}
		return ns, nil
	}
	var err error
	if l.sw, err = newNS(RoleSwitch); err != nil {
		return err
	}
	if l.client, err = newNS(RoleClient, lab.ClientSysctls...); err != nil {
		return err
	}
	if l.clientFW, err = newNS(RoleClientFW, lab.ClientSysctls...); err != nil {
		return err
	}
	// The LB forwards nothing itself: only its program moves packets, so a
	// packet the program does not handle cannot reach a backend by way of
	// the LB's stack.
	if l.lbNode, err = newNS(RoleLB, [2]string{"net/ipv4/ip_forward", "0"}); err != nil {
		return err
	}
	// Workers: forwarding, and no reverse-path filter: in dsr the
	// backends' replies leave with the VIP as source (which the worker has
	// no route to), and with vxlan the clients' packets arrive on the
	// tunnel while the route back to them is the external interface.
	workerSysctls := append(append([][2]string{}, lab.NodeSysctls...),
		[2]string{"net/ipv4/conf/all/rp_filter", "0"},
		[2]string{"net/ipv4/conf/default/rp_filter", "0"},
	)
	for i, role := range WorkerRoles {
		if l.workers[i], err = newNS(role, workerSysctls...); err != nil {
			return err
		}
	}
	for i, role := range BackendRoles {
		if l.backends[i], err = newNS(role); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.buildSegment(env); err != nil {
		return err
	}
	for _, c := range []*lab.NS{l.client, l.clientFW} {
		if err := c.RouteAdd(VIPNet, NodeIP, extIf, false); err != nil {
			return err
		}
	}
	for i := range l.workers {
		if err := l.buildBackend(i); err != nil {
			return err
		}
	}
	return nil
}

// buildSegment creates the bridge in the switch namespace and plugs every
// member in with a veth (ext0 on the member's side). The LB and the
// workers get the wire MTU plus the VXLAN overhead, so that the vxlan
// transport carries full-size client packets without fragmenting or
// clamping; the clients keep the wire MTU, which is what their TCP
// connections' MSS follows in every mode.
func (l *LB) buildSegment(env *lab.Env) error {
	inner := env.WireMTU + lab.VXLANOverhead
	if _, err := os.Stat("/proc/sys/net/bridge"); err == nil {
		// br_netfilter (if loaded) would pass bridged frames through the
		// switch's IPv4 hooks: a switch is L2 only.
		if err := l.sw.WriteSysctls([2]string{"net/bridge/bridge-nf-call-iptables", "0"}); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeIf, MTU: inner}}
	if err := l.sw.Handle().LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s in %s: %w", bridgeIf, l.sw.Name, err)
	}
	if err := l.sw.LinkUp(bridgeIf); err != nil {
		return err
	}
	brLink, err := l.sw.Handle().LinkByName(bridgeIf)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", bridgeIf, l.sw.Name, err)
	}
	type member struct {
		ns   *lab.NS
		role string
		addr netip.Addr
		mtu  int
	}
	members := []member{
		{l.client, RoleClient, ClientIP, env.WireMTU},
		{l.clientFW, RoleClientFW, ClientFWIP, env.WireMTU},
		{l.lbNode, RoleLB, NodeIP, inner},
	}
	for i, w := range l.workers {
		members = append(members, member{w, WorkerRoles[i], WorkerIPs[i], inner})
	}
	for _, m := range members {
		port := "sw-" + m.role
		v := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: port, MTU: inner, MasterIndex: brLink.Attrs().Index},
			PeerName:  extIf, PeerMTU: uint32(m.mtu), PeerNamespace: netlink.NsFd(m.ns.Fd()),
		}
		if err := l.sw.Handle().LinkAdd(v); err != nil {
			return fmt.Errorf("create veth %s in %s (peer %s in %s): %w", port, l.sw.Name, extIf, m.ns.Name, err)
		}
		if err := l.sw.LinkUp(port); err != nil {
			return err
		}
		if err := m.ns.AddrAdd(extIf, netip.PrefixFrom(m.addr, ExtNet.Bits())); err != nil {
			return err
		}
		if err := m.ns.LinkUp(extIf); err != nil {
			return err
		}
		if err := nicLike(m.ns, extIf, env.Wire); err != nil {
			return err
		}
	}
	return nil
}

// nicLike gives a member's interface the wire mode's behaviour (WireNIC:
// software GSO on transmit, GRO on receive), as the lab does for the
// node-to-node wire; the switch's ports stay plain veths.
func nicLike(ns *lab.NS, ifName, mode string) error {
	if mode != lab.WireNIC {
		return nil
	}
	if err := ns.SetNICLike(ifName); err != nil {
		return fmt.Errorf("NIC-like %s: %w", ifName, err)
	}
	return nil
}

// buildBackend connects backend pod i to worker i, Calico style: a /32
// address, a default route via 169.254.1.1 answered by proxy ARP on the
// worker's side of the veth, a /32 route to the pod on the worker.
func (l *LB) buildBackend(i int) error {
	w, pod, ip := l.workers[i], l.backends[i], BackendIPs[i]
	hostIf := "veth-" + BackendRoles[i]
	if _, err := lab.AddVethToPod(w, pod, hostIf, l.wireMTU); err != nil {
		return err
	}
	if err := pod.AddrAdd(lab.PodIf, lab.Host32(ip)); err != nil {
		return err
	}
	if err := pod.RouteAdd(lab.Host32(lab.CalicoGateway), netip.Addr{}, lab.PodIf, false); err != nil {
		return err
	}
	if err := pod.RouteAdd(netip.MustParsePrefix("0.0.0.0/0"), lab.CalicoGateway, lab.PodIf, false); err != nil {
		return err
	}
	if err := w.WriteSysctls(
		[2]string{"net/ipv4/conf/" + hostIf + "/proxy_arp", "1"},
		[2]string{"net/ipv4/neigh/" + hostIf + "/proxy_delay", "0"},
	); err != nil {
		return err
	}
	if err := w.LinkUp(hostIf); err != nil {
		return err
	}
	if err := w.RouteAdd(lab.Host32(ip), netip.Addr{}, hostIf, false); err != nil {
		return err
	}
	// Proxy ARP answers only if the gateway is routed elsewhere than the
	// asking interface (lab-facts pitfall).
	return w.RouteAdd(lab.Host32(lab.CalicoGateway), netip.Addr{}, "lo", false)
}
