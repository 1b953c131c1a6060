package wireguard

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PodRoute is a node's route to the other node's pod CIDR moved onto the
// tunnel by RoutePods; Restore puts the original back.
type PodRoute struct {
	h        *netlink.Handle
	podCIDR  netip.Prefix
	orig     *netlink.Route // nil: there was none
	tunnel   netlink.Route
	mu       sync.Mutex
	restored bool
}

// RoutePods replaces a node's route to podCIDR (the other node's pods, in
// the lab `via <other wire IP> dev wire0`) by `dev iface`, so that pod
// traffic enters the tunnel. h is a netlink handle of the node's namespace
// (lab.NS.Handle()). The replacement keeps the original's table, metric and
// TOS, so it takes the original's place rather than shadowing it. At most
// one route to podCIDR may exist (no multipath).
func RoutePods(h *netlink.Handle, iface string, podCIDR netip.Prefix) (*PodRoute, error) {
	if err := validPrefix(podCIDR); err != nil {
		return nil, fmt.Errorf("route pods over %s: pod CIDR: %w", iface, err)
	}
	l, err := h.LinkByName(iface)
	if err != nil {
		return nil, fmt.Errorf("route pods %s over %s: find %s: %w", podCIDR, iface, iface, err)
	}
	family := netlink.FAMILY_V4
	if podCIDR.Addr().Is6() {
		family = netlink.FAMILY_V6
	}
	filter := &netlink.Route{Dst: prefixNet(podCIDR), Table: unix.RT_TABLE_MAIN}
	routes, err := h.RouteListFiltered(family, filter, netlink.RT_FILTER_DST|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("route pods %s over %s: list routes: %w", podCIDR, iface, err)
	}
	if len(routes) > 1 {
		return nil, fmt.Errorf("route pods %s over %s: %d routes to %s, want at most one", podCIDR, iface, len(routes), podCIDR)
	}
	pr := &PodRoute{h: h, podCIDR: podCIDR}
	pr.tunnel = netlink.Route{
		LinkIndex: l.Attrs().Index,
		Dst:       prefixNet(podCIDR),
		Scope:     netlink.SCOPE_LINK,
		Table:     unix.RT_TABLE_MAIN,
	}
	if len(routes) == 1 {
		orig := routes[0]
		pr.orig = &orig
		pr.tunnel.Priority, pr.tunnel.Tos = orig.Priority, orig.Tos
		if orig.Table != 0 {
			pr.tunnel.Table = orig.Table
		}
	}
	if err := h.RouteReplace(&pr.tunnel); err != nil {
		return nil, fmt.Errorf("route pods %s over %s: replace route %s: %w", podCIDR, iface, describe(pr.orig), err)
	}
	return pr, nil
}

// Restore puts the original route back (or removes the tunnel's if there
// was none). It may be called more than once.
func (p *PodRoute) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.restored {
		return nil
	}
	var err error
	if p.orig != nil {
		err = p.h.RouteReplace(p.orig)
	} else {
		err = p.h.RouteDel(&p.tunnel)
		if errors.Is(err, unix.ESRCH) {
			err = nil // already gone (its device was removed)
		}
	}
	if err != nil {
		return fmt.Errorf("restore route to %s (%s): %w", p.podCIDR, describe(p.orig), err)
	}
	p.restored = true
	return nil
}

// Original is the route RoutePods replaced (nil if there was none).
func (p *PodRoute) Original() *netlink.Route { return p.orig }

func describe(r *netlink.Route) string {
	if r == nil {
		return "none before"
	}
	s := "was dev index " + fmt.Sprint(r.LinkIndex)
	if r.Gw != nil {
		s = "was via " + r.Gw.String() + " dev index " + fmt.Sprint(r.LinkIndex)
	}
	return s
}
