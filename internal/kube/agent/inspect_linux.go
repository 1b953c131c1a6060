package agent

import (
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// InspectNetns describes the calling thread's network namespace: its links
// with their addresses, the default routes, the tunnel links and, when ip
// is valid, the link that holds ip. The error (also in Inspect.Error) says
// what could not be read; what was read is returned with it.
func InspectNetns(ip netip.Addr) (Inspect, error) {
	in := Inspect{Schema: SchemaInspect, Links: []Link{}, Tunnels: []Encap{}}
	fail := func(err error) (Inspect, error) {
		in.Error = err.Error()
		return in, err
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return fail(fmt.Errorf("open a netlink socket: %w", err))
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return fail(fmt.Errorf("list links: %w", err))
	}
	addrs, err := h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return fail(fmt.Errorf("list addresses: %w", err))
	}
	byIndex := map[int][]string{}
	for _, a := range addrs {
		if a.IPNet != nil {
			byIndex[a.LinkIndex] = append(byIndex[a.LinkIndex], a.IPNet.String())
		}
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	for _, l := range links {
		in.Links = append(in.Links, linkOf(l, names, byIndex[l.Attrs().Index]))
	}
	sort.Slice(in.Links, func(i, j int) bool { return in.Links[i].Index < in.Links[j].Index })
	in.Tunnels = Tunnels(in.Links)
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := h.RouteList(nil, fam)
		if err != nil {
			return fail(fmt.Errorf("list routes: %w", err))
		}
		r := defaultRoute(routes, names)
		if fam == netlink.FAMILY_V4 {
			in.DefaultRoute = r
		} else {
			in.DefaultRoute6 = r
		}
	}
	in.setAddr(ip)
	return in, nil
}

// linkOf converts a netlink link.
func linkOf(l netlink.Link, names map[int]string, addrs []string) Link {
	a := l.Attrs()
	out := Link{Name: a.Name, Index: a.Index, Type: l.Type(), MTU: a.MTU, State: "down",
		OperState: a.OperState.String(), Addrs: addrs}
	if out.Addrs == nil {
		out.Addrs = []string{}
	}
	if a.Flags&net.FlagUp != 0 {
		out.State = "up"
	}
	if len(a.HardwareAddr) > 0 {
		out.MAC = a.HardwareAddr.String()
	}
	if a.MasterIndex != 0 {
		out.Master = names[a.MasterIndex]
	}
	switch t := l.(type) {
	case *netlink.Vxlan:
		out.VNI, out.Port, out.External = uint32(t.VxlanId), uint16(t.Port), t.FlowBased
	case *netlink.Geneve:
		out.VNI, out.Port, out.External = t.ID, t.Dport, t.FlowBased
	}
	return out
}

// defaultRoute returns the first default route of routes (the main
// table's, as RouteList gives them), or nil. A multipath route gives its
// first hop.
func defaultRoute(routes []netlink.Route, names map[int]string) *Route {
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 || !r.Dst.IP.IsUnspecified() {
				continue
			}
		}
		if r.Type != 0 && r.Type != unix.RTN_UNICAST { // not unreachable, blackhole, ...
			continue
		}
		idx, gw := r.LinkIndex, r.Gw
		if idx == 0 && len(r.MultiPath) > 0 {
			idx, gw = r.MultiPath[0].LinkIndex, r.MultiPath[0].Gw
		}
		out := &Route{Dev: names[idx], MTU: r.MTU}
		if gw != nil {
			out.Gateway = gw.String()
		}
		return out
	}
	return nil
}
