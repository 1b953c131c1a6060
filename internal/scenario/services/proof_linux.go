package services

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/netstat"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// tcpCounters sums two TcpExt counters over the scenario's pods.
func (p *prepared) tcpCounters() (synRetrans, pawsTW uint64, err error) {
	for _, pod := range p.lab.Topology.Pods {
		var text []byte
		err := pod.NS.Do(func() (err error) {
			text, err = os.ReadFile("/proc/thread-self/net/netstat")
			return err
		})
		if err != nil {
			return 0, 0, fmt.Errorf("read TCP counters of %s: %w", pod.Role, err)
		}
		m, err := netstat.Parse(string(text))
		if err != nil {
			return 0, 0, fmt.Errorf("TCP counters of %s: %w", pod.Role, err)
		}
		synRetrans += m["TcpExt:TCPSynRetrans"]
		pawsTW += m["TcpExt:PAWSTimewait"]
	}
	return synRetrans, pawsTW, nil
}

func conntrackStats(nodes [2]*lab.NS, vips []netip.Addr, backends []netip.Addr) (ctStats, error) {
	st := ctStats{backends: map[netip.Addr]bool{}}
	isVIP := func(a netip.Addr) bool { return FillerVIPs.Contains(a) || containsAddr(vips, a) }
	for _, node := range nodes {
		flows, err := node.Handle().ConntrackTableList(netlink.ConntrackTable, netlink.FAMILY_V4)
		if err != nil {
			return st, fmt.Errorf("list conntrack entries in %s: %w", node.Name, err)
		}
		for _, f := range flows {
			odst, _ := netip.AddrFromSlice(f.Forward.DstIP)
			rsrc, _ := netip.AddrFromSlice(f.Reverse.SrcIP)
			odst, rsrc = odst.Unmap(), rsrc.Unmap()
			if isVIP(odst) {
				st.vip++
			}
			if odst != rsrc {
				st.nat++
			}
			for _, a := range []netip.Addr{odst, rsrc} {
				if containsAddr(backends, a) {
					st.backends[a] = true
				}
			}
		}
	}
	return st, nil
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// BeginCell implements scenario.Checker.
func (p *prepared) BeginCell(c scenario.Cell) (func() (map[string]float64, error), error) {
	if p.flush != nil {
		if err := p.flush(); err != nil {
			return nil, err
		}
	}
	var before uint64
	if p.translations != nil {
		n, err := p.translations()
		if err != nil {
			return nil, err
		}
		before = n
	}
	syn0, paws0, err := p.tcpCounters()
	if err != nil {
		return nil, err
	}
	return func() (map[string]float64, error) {
		m := map[string]float64{}
		syn1, paws1, err := p.tcpCounters()
		if err != nil {
			return nil, err
		}
		m[MetricSynRetrans] = float64(syn1 - syn0)
		m[MetricPAWSTimewait] = float64(paws1 - paws0)
		st, err := conntrackStats(p.lab.Topology.Nodes, []netip.Addr{MeasuredVIP, HairpinVIP}, backendIPs())
		if err != nil {
			return nil, err
		}
		m[MetricVIPEntries] = float64(st.vip)
		m[MetricNATEntries] = float64(st.nat)
		m[MetricBackends] = float64(len(st.backends))
		var moved uint64
		if p.translations != nil {
			after, err := p.translations()
			if err != nil {
				return nil, err
			}
			moved = after - before
			m[MetricTranslations] = float64(moved)
		}
		return m, checkCell(p.impl, c, st, moved)
	}, nil
}

// verify runs a short tcp_crr on both paths, each checked as a cell is.
func (p *prepared) verify(ctx context.Context) error {
	if p.env.Run == nil {
		return errors.New("services: no way to run a client (not run by the suite)")
	}
	for _, path := range []string{PathPodToService, PathHairpin} {
		c := scenario.Cell{Test: engine.TCPCRR, Flows: 1, Path: path}
		t, err := p.Target(c)
		if err != nil {
			return err
		}
		if err := resetConntrack(p.lab.Topology.Nodes); err != nil {
			return err
		}
		end, err := p.BeginCell(c)
		if err != nil {
			return err
		}
		args := append([]string{"run", "--test", c.Test, "--duration", "300ms", "--warmup", "0s", "--repeat", "1", "--format", "json", "-q"}, t.Args...)
		res, err := p.env.Run(ctx, t.Client, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if tr := transactions(res); tr == 0 {
			return fmt.Errorf("%s: no transaction through the service", path)
		}
		if _, err := end(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

func transactions(r *result.Result) float64 {
	if r == nil || len(r.Repeats) == 0 {
		return 0
	}
	return r.Repeats[0].Metrics[result.TransPerSec]
}

// resetConntrack flushes the nodes' conntrack tables.
func resetConntrack(nodes [2]*lab.NS) error {
	for _, node := range nodes {
		if err := node.Handle().ConntrackTableFlush(netlink.ConntrackTable); err != nil {
			return fmt.Errorf("flush conntrack in %s: %w", node.Name, err)
		}
	}
	return nil
}
