package mtu

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/netstat"
)

// podRef is a pod, its node and the node-side end of its veth.
type podRef struct {
	ns, node *lab.NS
	hostDev  string
}

// podOf finds the node-side veth of the pod in ns on node: the topology's
// (routed datapaths) or the lab's naming of the standard pods ("veth-"
// and the role: bridged datapaths), checked to be the peer of the pod's
// interface.
func podOf(topo *lab.Topology, ns, node *lab.NS, role string) (podRef, error) {
	r := podRef{ns: ns, node: node, hostDev: "veth-" + role}
	for _, p := range topo.Pods {
		if p.NS == ns && p.HostDev != "" {
			r.hostDev = p.HostDev
		}
	}
	pod, err := ns.Handle().LinkByName(lab.PodIf)
	if err != nil {
		return r, fmt.Errorf("find %s in %s: %w", lab.PodIf, ns.Name, err)
	}
	host, err := node.Handle().LinkByName(r.hostDev)
	if err != nil {
		return r, fmt.Errorf("find %s in %s: %w", r.hostDev, node.Name, err)
	}
	if pod.Attrs().ParentIndex != host.Attrs().Index {
		return r, fmt.Errorf("%s in %s is not the peer of %s in %s (peer index %d, %s is %d)",
			r.hostDev, node.Name, lab.PodIf, ns.Name, pod.Attrs().ParentIndex, r.hostDev, host.Attrs().Index)
	}
	return r, nil
}

func linkMTU(ns *lab.NS, dev string) (int, error) {
	l, err := ns.Handle().LinkByName(dev)
	if err != nil {
		return 0, fmt.Errorf("find %s in %s: %w", dev, ns.Name, err)
	}
	return l.Attrs().MTU, nil
}

func setLinkMTU(ns *lab.NS, dev string, mtu int) error {
	l, err := ns.Handle().LinkByName(dev)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", dev, ns.Name, err)
	}
	if err := ns.Handle().LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("set MTU %d on %s in %s: %w", mtu, dev, ns.Name, err)
	}
	return nil
}

func rxBytes(ns *lab.NS, dev string) (uint64, error) {
	l, err := ns.Handle().LinkByName(dev)
	if err != nil {
		return 0, fmt.Errorf("find %s in %s: %w", dev, ns.Name, err)
	}
	if s := l.Attrs().Statistics; s != nil {
		return s.RxBytes, nil
	}
	return 0, fmt.Errorf("no statistics for %s in %s", dev, ns.Name)
}

// flushRouteCache forgets ns's learnt path MTUs: writing the route flush
// sysctl also invalidates the next-hop exceptions that hold them.
func flushRouteCache(ns *lab.NS) error {
	return ns.WriteSysctls([2]string{"net/ipv4/route/flush", "1"})
}

// snmpOf reads ns's /proc/net/snmp counters ("Tcp:RetransSegs", …).
func snmpOf(ns *lab.NS) (map[string]uint64, error) {
	var text []byte
	err := ns.Do(func() (err error) {
		text, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the SNMP counters of %s: %w", ns.Name, err)
	}
	m, err := netstat.Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("SNMP counters of %s: %w", ns.Name, err)
	}
	return m, nil
}

// pathMTUTo is ns's path MTU towards target ("ip:port"), as `ip route
// get` shows it: a learnt exception's MTU (learnt true), else the output
// device's MTU.
func pathMTUTo(ns *lab.NS, target string) (mtu int, learnt bool, err error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return 0, false, fmt.Errorf("server address %q: %w", target, err)
	}
	routes, err := ns.Handle().RouteGet(net.IP(ap.Addr().AsSlice()))
	if err != nil || len(routes) == 0 {
		return 0, false, fmt.Errorf("route to %v in %s: %d routes, %v", ap.Addr(), ns.Name, len(routes), err)
	}
	if routes[0].MTU > 0 {
		return routes[0].MTU, true, nil
	}
	l, err := ns.Handle().LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return 0, false, fmt.Errorf("output device of the route to %v in %s: %w", ap.Addr(), ns.Name, err)
	}
	return l.Attrs().MTU, false, nil
}
