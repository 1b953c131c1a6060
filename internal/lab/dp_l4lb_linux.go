package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/bpf/nslb"
)

func init() {
	RegisterHidden(func() Datapath { return &L4LBDatapath{} })
}

// Interface names of the l4lb lab.
const (
	l4lbExtIf    = "ext0" // every member's interface on the external segment
	l4lbBridgeIf = "br0"  // the external segment (in the switch namespace)
)

// l4lbTunMACs are the VXLAN devices' MACs, fixed so that the LB can
// address a worker's device in the inner frame without learning it: the
// LB's, then worker1's and worker2's.
var l4lbTunMACs = [3]net.HardwareAddr{
	{0x02, 0xcb, 0x4c, 0x42, 0x00, 0x01},
	{0x02, 0xcb, 0x4c, 0x42, 0x00, 0x0b},
	{0x02, 0xcb, 0x4c, 0x42, 0x00, 0x0c},
}

// L4LBDatapath is the hidden "l4lb" datapath: the namespaces of the L4
// load-balancer lab. L4LB returns the handle to configure and observe it.
type L4LBDatapath struct {
	lb *L4LB
}

func (*L4LBDatapath) Name() string { return L4LBDatapathName }

func (*L4LBDatapath) Description() string {
	return "north-south L4 load balancer (seed 003): external clients, a BPF (TCX) LB node with Maglev, " +
		"snat or dsr, direct or vxlan to two workers, BPF host firewall; a scenario's topology, not a matrix cell"
}

// PacketPath describes the current mode's path (the default mode before
// Setup).
func (d *L4LBDatapath) PacketPath() string {
	if d.lb != nil {
		if m := d.lb.Mode(); m.LB != "" {
			return m.PacketPath()
		}
	}
	return l4lbDefaultMode.PacketPath()
}

// OwnedByProcess: the TCX links live as long as this process's file
// descriptors.
func (*L4LBDatapath) OwnedByProcess() bool { return true }

// L4LB returns the lab's load balancer (nil before Setup).
func (d *L4LBDatapath) L4LB() *L4LB { return d.lb }

// L4LBOf returns the load balancer of a lab built with the l4lb datapath.
func L4LBOf(l *Lab) (*L4LB, error) {
	dp, _, err := l.Datapath(L4LBDatapathName)
	if err != nil {
		return nil, err
	}
	d, ok := dp.(*L4LBDatapath)
	if !ok || d.lb == nil {
		return nil, fmt.Errorf("datapath %s has no load balancer", L4LBDatapathName)
	}
	return d.lb, nil
}

func (*L4LBDatapath) Probe() error {
	for _, p := range []struct {
		what string
		l    netlink.Link
	}{
		{"veth pair", &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}},
		{"Linux bridge", &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "probe2"}}},
		{"VXLAN device (external)", &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "probe3"}, FlowBased: true, Port: vxlanPort}},
	} {
		if err := probeLink(p.what, p.l); err != nil {
			return err
		}
	}
	if err := nslb.Probe(); err != nil {
		if errors.Is(err, nslb.ErrNotSupported) {
			return &UnsupportedError{Feature: "BPF L4 load balancer", Reason: err.Error()}
		}
		return fmt.Errorf("probe BPF L4 load balancer: %w", err)
	}
	return nil
}

// Setup builds the namespaces, the external segment, the backend pods and
// the routes, then configures the default mode (snat, direct, firewall
// off).
func (d *L4LBDatapath) Setup(ctx context.Context, env *Env) (*Topology, error) {
	lb := &L4LB{wireMTU: env.WireMTU, logger: env.Logger}
	d.lb = lb
	if err := lb.build(ctx, env); err != nil {
		return nil, err
	}
	if err := lb.Configure(ctx, l4lbDefaultMode); err != nil {
		return nil, err
	}
	// No Paths: the client reaches the backends through the VIP, which no
	// single server namespace owns; a scenario uses the L4LB's accessors.
	return &Topology{PodMTU: env.WireMTU, PathMTU: env.WireMTU, Nodes: lb.workers, Pods: lb.Backends()}, nil
}

// Teardown releases the BPF programs; the lab deletes the namespaces (and
// with them every device and route).
func (d *L4LBDatapath) Teardown(context.Context) error {
	if d.lb == nil {
		return nil
	}
	return d.lb.close()
}

var l4lbDefaultMode = L4LBMode{LB: L4LBSNAT, Transport: L4LBDirect}

// build creates the lab's namespaces and wiring (no BPF yet).
func (l *L4LB) build(ctx context.Context, env *Env) error {
	newNS := func(role string, sysctls ...[2]string) (*NS, error) {
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
	if l.sw, err = newNS(L4LBRoleSwitch); err != nil {
		return err
	}
	if l.client, err = newNS(L4LBRoleClient, clientSysctls...); err != nil {
		return err
	}
	if l.clientFW, err = newNS(L4LBRoleClientFW, clientSysctls...); err != nil {
		return err
	}
	// The LB forwards nothing itself: only its program moves packets, so a
	// packet the program does not handle cannot reach a backend by way of
	// the LB's stack.
	if l.lbNode, err = newNS(L4LBRoleLB, [2]string{"net/ipv4/ip_forward", "0"}); err != nil {
		return err
	}
	// Workers: forwarding, and no reverse-path filter: in dsr the
	// backends' replies leave with the VIP as source (which the worker has
	// no route to), and with vxlan the clients' packets arrive on the
	// tunnel while the route back to them is the external interface.
	workerSysctls := append(append([][2]string{}, nodeSysctls...),
		[2]string{"net/ipv4/conf/all/rp_filter", "0"},
		[2]string{"net/ipv4/conf/default/rp_filter", "0"},
	)
	for i, role := range L4LBWorkerRoles {
		if l.workers[i], err = newNS(role, workerSysctls...); err != nil {
			return err
		}
	}
	for i, role := range L4LBBackendRoles {
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
	for _, c := range []*NS{l.client, l.clientFW} {
		if err := routeAdd(c, L4LBVIPNet, L4LBNodeIP, l4lbExtIf, false); err != nil {
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
func (l *L4LB) buildSegment(env *Env) error {
	inner := env.WireMTU + VXLANOverhead
	if _, err := os.Stat("/proc/sys/net/bridge"); err == nil {
		// br_netfilter (if loaded) would pass bridged frames through the
		// switch's IPv4 hooks: a switch is L2 only.
		if err := l.sw.WriteSysctls([2]string{"net/bridge/bridge-nf-call-iptables", "0"}); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: l4lbBridgeIf, MTU: inner}}
	if err := l.sw.handle.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s in %s: %w", l4lbBridgeIf, l.sw.Name, err)
	}
	if err := linkUp(l.sw, l4lbBridgeIf); err != nil {
		return err
	}
	brLink, err := l.sw.handle.LinkByName(l4lbBridgeIf)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", l4lbBridgeIf, l.sw.Name, err)
	}
	type member struct {
		ns   *NS
		role string
		addr netip.Addr
		mtu  int
	}
	members := []member{
		{l.client, L4LBRoleClient, L4LBClientIP, env.WireMTU},
		{l.clientFW, L4LBRoleClientFW, L4LBClientFWIP, env.WireMTU},
		{l.lbNode, L4LBRoleLB, L4LBNodeIP, inner},
	}
	for i, w := range l.workers {
		members = append(members, member{w, L4LBWorkerRoles[i], L4LBWorkerIPs[i], inner})
	}
	for _, m := range members {
		port := "sw-" + m.role
		v := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: port, MTU: inner, MasterIndex: brLink.Attrs().Index},
			PeerName:  l4lbExtIf, PeerMTU: uint32(m.mtu), PeerNamespace: netlink.NsFd(m.ns.Fd()),
		}
		if err := l.sw.handle.LinkAdd(v); err != nil {
			return fmt.Errorf("create veth %s in %s (peer %s in %s): %w", port, l.sw.Name, l4lbExtIf, m.ns.Name, err)
		}
		if err := linkUp(l.sw, port); err != nil {
			return err
		}
		if err := addrAdd(m.ns, l4lbExtIf, netip.PrefixFrom(m.addr, L4LBExtNet.Bits())); err != nil {
			return err
		}
		if err := linkUp(m.ns, l4lbExtIf); err != nil {
			return err
		}
		if err := nicLike(m.ns, l4lbExtIf, env.Wire); err != nil {
			return err
		}
	}
	return nil
}

// nicLike gives a member's interface the wire mode's behaviour (WireNIC:
// software GSO on transmit, GRO on receive), as configureWire does for the
// node-to-node wire; the switch's ports stay plain veths.
func nicLike(ns *NS, ifName, mode string) error {
	if mode != WireNIC {
		return nil
	}
	err := ns.ethtool(func(fd int) error {
		f, err := getFeatures(fd, ifName)
		if err != nil {
			return err
		}
		want := map[string]bool{"rx-gro": true}
		for _, name := range wireFeaturesOff(f.names, f.fixed) {
			want[name] = false
		}
		return setFeatures(fd, ifName, want)
	})
	if err != nil {
		return fmt.Errorf("NIC-like %s: %w", ifName, err)
	}
	return nil
}

// buildBackend connects backend pod i to worker i, Calico style: a /32
// address, a default route via 169.254.1.1 answered by proxy ARP on the
// worker's side of the veth, a /32 route to the pod on the worker.
func (l *L4LB) buildBackend(i int) error {
	w, pod, ip := l.workers[i], l.backends[i], L4LBBackendIPs[i]
	hostIf := "veth-" + L4LBBackendRoles[i]
	if _, err := addVethToPod(w, pod, hostIf, l.wireMTU); err != nil {
		return err
	}
	if err := addrAdd(pod, PodIf, host32(ip)); err != nil {
		return err
	}
	if err := routeAdd(pod, host32(CalicoGateway), netip.Addr{}, PodIf, false); err != nil {
		return err
	}
	if err := routeAdd(pod, netip.MustParsePrefix("0.0.0.0/0"), CalicoGateway, PodIf, false); err != nil {
		return err
	}
	if err := w.WriteSysctls(
		[2]string{"net/ipv4/conf/" + hostIf + "/proxy_arp", "1"},
		[2]string{"net/ipv4/neigh/" + hostIf + "/proxy_delay", "0"},
	); err != nil {
		return err
	}
	if err := linkUp(w, hostIf); err != nil {
		return err
	}
	if err := routeAdd(w, host32(ip), netip.Addr{}, hostIf, false); err != nil {
		return err
	}
	// Proxy ARP answers only if the gateway is routed elsewhere than the
	// asking interface (lab-facts pitfall).
	return routeAdd(w, host32(CalicoGateway), netip.Addr{}, "lo", false)
}
