package l4lb

import (
	"errors"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/bpf/nscpu"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario/l4lb/lbnet"
)

// snapshot is what a cell's metrics are differences of.
type snapshot struct {
	at       time.Time
	counters lbnet.Counters
	ct       lab.CTStats // the LB node's conntrack statistics (kubeproxy)
	cpu      map[uint64]nscpu.Usage
	procs    []time.Duration // backend i's process CPU time
}

// Metrics of every cell (besides the engine's).
const (
	MetricLBForward     = "lb_forward_packets"       // client->backend packets the LB translated
	MetricLBReverse     = "lb_reverse_packets"       // replies the LB translated (0 in dsr)
	MetricWorkerRevNAT  = "lb_worker_revnat_packets" // replies the workers translated (dsr)
	MetricFirewallDrops = "lb_firewall_drops"        // service packets the firewall dropped
	MetricRefusedTried  = "lb_refused_attempts"      // the refused client's connects
	MetricRefusedOK     = "lb_refused_connected"     // … that completed a handshake
	MetricRefusedReset  = "lb_refused_reset"         // … that were answered with a RST
	MetricLBCPU         = "lb_node_cpu_pct"          // the LB node's CPU
	MetricWorkersCPU    = "lb_workers_cpu_pct"       // both workers with their pods and backends
	MetricWorker1CPU    = "lb_worker1_cpu_pct"
	MetricWorker2CPU    = "lb_worker2_cpu_pct"
	// kubeproxy: connections the DNAT rules translated, the LB's
	// conntrack entries with the VIP at the cell's end (TIME_WAIT
	// included), entries inserted and packets dropped for want of one.
	MetricKPDNAT       = "lb_kubeproxy_dnat"
	MetricCTVIPEntries = "lb_conntrack_vip_entries"
	MetricCTInserts    = "lb_conntrack_inserts"
	MetricCTDrops      = "lb_conntrack_drops"
	// The refused client's SYN flood: asked (SYN/s), sent, and the
	// measured send rate (sent over the sender's own run time).
	MetricFloodAsked = "lb_synflood_asked_per_sec"
	MetricFloodSent  = "lb_synflood_sent"
	MetricFloodRate  = "lb_synflood_sent_per_sec"
)

// cellMetrics are the differences of two snapshots. CPU is % of one core
// over the wall time between them: receive processing charged to the
// node's namespaces, plus (workers) the backend processes.
func cellMetrics(before, after snapshot, r lbnet.RefusalResult, lbNode []uint64, workers [2][]uint64) map[string]float64 {
	m := map[string]float64{
		MetricLBForward:     float64(after.counters.Forward - before.counters.Forward),
		MetricLBReverse:     float64(after.counters.Reverse - before.counters.Reverse),
		MetricWorkerRevNAT:  float64(after.counters.WorkerRevNAT - before.counters.WorkerRevNAT),
		MetricFirewallDrops: float64(after.counters.FirewallDrops - before.counters.FirewallDrops),
		MetricRefusedTried:  float64(r.Attempts),
		MetricRefusedOK:     float64(r.Connected),
		MetricRefusedReset:  float64(r.Reset),
	}
	if k := after.counters.KubeProxyDNAT - before.counters.KubeProxyDNAT; k > 0 || after.ct != (lab.CTStats{}) {
		m[MetricKPDNAT] = float64(k)
		m[MetricCTInserts] = float64(after.ct.Insert - before.ct.Insert)
		m[MetricCTDrops] = float64(after.ct.Drop - before.ct.Drop)
	}
	wall := after.at.Sub(before.at)
	if before.cpu == nil || after.cpu == nil || wall <= 0 {
		return m
	}
	d := nscpu.Sub(after.cpu, before.cpu)
	pct := func(ns time.Duration) float64 { return 100 * ns.Seconds() / wall.Seconds() }
	m[MetricLBCPU] = pct(time.Duration(nscpu.Sum(d, lbNode...).SoftirqNs))
	var total time.Duration
	for i, inos := range workers {
		t := time.Duration(nscpu.Sum(d, inos...).SoftirqNs)
		if i < len(after.procs) && i < len(before.procs) {
			t += after.procs[i] - before.procs[i]
		}
		total += t
		m[[2]string{MetricWorker1CPU, MetricWorker2CPU}[i]] = pct(t)
	}
	m[MetricWorkersCPU] = pct(total)
	return m
}

// checkCell is the proof of a cell: the LB translated the client's
// packets; in snat it translated the replies, in dsr none (the workers
// did); with the firewall on the refused client never connected and its
// attempts were dropped, with it off nothing was dropped and its attempts
// were answered.
func checkCell(mode lbnet.Mode, m map[string]float64) error {
	var errs []error
	if m[MetricLBForward] == 0 {
		errs = append(errs, errors.New("the LB translated no packet"))
	}
	switch mode.LB {
	case lbnet.SNAT:
		if m[MetricLBReverse] == 0 {
			errs = append(errs, errors.New("snat: the LB translated no reply"))
		}
	case lbnet.KubeProxy:
		if m[MetricLBReverse] == 0 {
			errs = append(errs, errors.New("kubeproxy: the LB forwarded no reply"))
		}
		if m[MetricKPDNAT] == 0 || m[MetricCTVIPEntries] == 0 {
			errs = append(errs, fmt.Errorf("kubeproxy: %v connections DNATed, %v conntrack entries with the VIP, want both > 0", m[MetricKPDNAT], m[MetricCTVIPEntries]))
		}
	case lbnet.DSR:
		if m[MetricLBReverse] != 0 {
			errs = append(errs, fmt.Errorf("dsr: %v replies went back through the LB", m[MetricLBReverse]))
		}
		if m[MetricWorkerRevNAT] == 0 {
			errs = append(errs, errors.New("dsr: the workers translated no reply"))
		}
	}
	if asked, ok := m[MetricFloodAsked]; ok && asked > 0 && m[MetricFloodSent] == 0 {
		errs = append(errs, errors.New("syn flood: nothing sent"))
	}
	tried, ok := m[MetricRefusedTried], m[MetricRefusedOK]+m[MetricRefusedReset]
	if mode.Firewall {
		if ok != 0 {
			errs = append(errs, fmt.Errorf("firewall on: the refused client got %v answers", ok))
		}
		if tried > 0 && m[MetricFirewallDrops] == 0 {
			errs = append(errs, errors.New("firewall on: no drop counted for the refused client"))
		}
	} else {
		if m[MetricFirewallDrops] != 0 {
			errs = append(errs, fmt.Errorf("firewall off: %v packets dropped", m[MetricFirewallDrops]))
		}
		if tried > 0 && ok == 0 {
			errs = append(errs, errors.New("firewall off: the second client got no answer"))
		}
	}
	return errors.Join(errs...)
}

// addFloodMetrics adds the flood's metrics (none without a flood).
func addFloodMetrics(m map[string]float64, r lbnet.SYNFloodResult) {
	if r.Rate == 0 {
		return
	}
	m[MetricFloodAsked] = float64(r.Rate)
	m[MetricFloodSent] = float64(r.Sent)
	m[MetricFloodRate] = r.Achieved()
}
