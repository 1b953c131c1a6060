package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/pkg/result"
)

// Path counters of a cluster run, read around every cell by `cnibench k8s
// agent netstat`, which reads /proc/net/snmp and /proc/net/netstat of the
// network namespace it runs in. Their source is in their names:
//
//   - k8s_pods_…: the run's own pods' namespaces (cli-a, srv-a, srv-b):
//     only the benchmark's sockets, so every count is the run's;
//   - k8s_nodes_…: the nodes' namespaces, through the host-network pods
//     (host-a, host-b): node-wide, so they include every other
//     host-network workload's (kubelet, the CNI's agents, …).
//
// A pod path's warning rests on the pods' counters only (a pod's SYNs are
// counted in its own namespace, never the node's); the node-to-node
// path's on the nodes', and says they are node-wide.
const (
	MetricPodsSynRetransmits  = "k8s_pods_syn_retransmits"
	MetricPodsPAWSTimewait    = "k8s_pods_paws_timewait_rejects"
	MetricNodesSynRetransmits = "k8s_nodes_syn_retransmits"
	MetricNodesPAWSTimewait   = "k8s_nodes_paws_timewait_rejects"
)

// counterPods are the pods whose namespaces are read: the pod network's
// (client and servers) and, through the host-network pods, the nodes'.
var counterPods = []struct {
	short string
	node  bool
}{{podCliA, false}, {podSrvA, false}, {podSrvB, false}, {podHostA, true}, {podHostB, true}}

// evidence is one cell's counters (backend.Evidence).
type evidence struct {
	d      *Deployment
	before map[string]agent.Netstat
	errs   []string
}

// Evidence implements backend.Deployment: the TCP counters that explain a
// slow connection rate (SYNs retransmitted, SYNs refused by a TIME_WAIT
// socket of the same four-tuple), read in the pods' and the nodes'
// namespaces before and after the cell.
func (d *Deployment) Evidence(string) backend.Evidence {
	e := &evidence{d: d}
	e.before, e.errs = d.readCounters()
	return e
}

// readCounters reads every counter pod at once (bounded).
func (d *Deployment) readCounters() (map[string]agent.Netstat, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out := map[string]agent.Netstat{}
	var errs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range counterPods {
		if p.node && d.noHost != "" {
			continue // no host pods: the pods' counters only
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n agent.Netstat
			err := d.agentJSON(ctx, p.short, []string{"netstat"}, &n)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("TCP counters of %s not read: %v", p.short, err))
			case n.Error != "":
				errs = append(errs, fmt.Sprintf("TCP counters of %s not read: %s", p.short, n.Error))
			default:
				out[p.short] = n
			}
		}()
	}
	wg.Wait()
	return out, errs
}

// End implements backend.Evidence.
func (e *evidence) End() (map[string]float64, []string) {
	after, errs := e.d.readCounters()
	return counterDeltas(e.before, after), append(e.errs, errs...)
}

// counterDeltas sums the counters' growth over the pods and over the
// nodes; a pod missing from either reading is left out.
func counterDeltas(before, after map[string]agent.Netstat) map[string]float64 {
	m := map[string]float64{}
	delta := func(short, key string) (float64, bool) {
		b, ok1 := before[short]
		a, ok2 := after[short]
		if !ok1 || !ok2 || a.Counters[key] < b.Counters[key] {
			return 0, false
		}
		return float64(a.Counters[key] - b.Counters[key]), true
	}
	for _, p := range counterPods {
		syn, ok1 := delta(p.short, "TcpExt:TCPSynRetrans")
		paws, ok2 := delta(p.short, "TcpExt:PAWSTimewait")
		if !ok1 || !ok2 {
			continue
		}
		synKey, pawsKey := MetricPodsSynRetransmits, MetricPodsPAWSTimewait
		if p.node {
			synKey, pawsKey = MetricNodesSynRetransmits, MetricNodesPAWSTimewait
		}
		m[synKey] += syn
		m[pawsKey] += paws
	}
	return m
}

// counterSource is where the counters that judge path come from: the
// metrics and how to say so.
func counterSource(path string) (synKey, pawsKey, source string) {
	if path == PathNodeToNode {
		return MetricNodesSynRetransmits, MetricNodesPAWSTimewait,
			"node-wide, in the namespaces of nodes' host pods " + podHostA + " and " + podHostB + ", so other host-network workloads' count too"
	}
	return MetricPodsSynRetransmits, MetricPodsPAWSTimewait,
		"in the run's own pods' network namespaces (" + podCliA + ", " + podSrvA + ", " + podSrvB + ")"
}

// Check implements backend.Evidence: retransmitted SYNs explain a slow
// connection rate, and SYNs refused by TIME_WAIT sockets (PAWS) say why
// they were re-sent. What a retransmission cost is the cell's slowest
// connect, said as measured: a SYN lost without an answer waits the
// initial retransmission timeout (1 s), while one a TIME_WAIT socket
// answered with its ACK is re-sent after TCP_TIMEOUT_MIN (two jiffies:
// tcp_rcv_synsent_state_process), so PAWS refusals cost milliseconds each
// (about 16 ms at most on the local cluster, docs/findings.md §16f). The
// counters are the run's pods' for a pod path, the nodes' for the
// node-to-node path (counterSource).
func (e *evidence) Check(path string, m map[string]float64) []string {
	synKey, pawsKey, source := counterSource(path)
	syn := m[synKey]
	if syn == 0 {
		return nil
	}
	paws := m[pawsKey]
	w := fmt.Sprintf("%s: %.0f SYN(s) retransmitted during the cell, %s", path, syn, source)
	if paws > 0 {
		w += fmt.Sprintf("; %.0f segment(s) refused by TIME_WAIT sockets of the same four-tuple (PAWS: a reused port with another timestamp offset, e.g. after NAT)", paws)
	}
	if c, ok := m[result.ConnectUsMax]; ok && c > 0 {
		w += fmt.Sprintf("; the slowest connect took %s (a lost SYN waits 1 s, one a TIME_WAIT socket answered is re-sent within milliseconds)", result.Format(result.ConnectUsMax, c))
	}
	return []string{w}
}
