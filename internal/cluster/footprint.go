package cluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/pkg/result"
)

// footprintLoad is the load of the "under load" sample: the most flows the
// matrix uses, across nodes, through the pod network.
const footprintLoadFlows = 8

// usage is one pod's CPU and memory over a sample.
type usage struct {
	millicores float64
	memBytes   float64
	err        string
}

// checkFootprint measures the CPU and memory of the CNI's own pods (summed
// on the run's two nodes; those elsewhere apart, see footprintFindingOn), idle (the run's pods idle: the cluster as without the
// benchmark) and under load (a cross-node stream through the pod network),
// from the pods' cgroups read by the privileged host pods, or from
// metrics.k8s.io for pods on other nodes when the cluster serves it.
func (d *Deployment) checkFootprint(ctx context.Context) result.Finding {
	pods := d.cni.Pods
	if len(pods) == 0 {
		f := result.Finding{Verdict: "none", Metrics: map[string]float64{"cni_pods": 0}}
		name := d.cni.Name
		if name == "" {
			name = "the CNI"
		}
		f.Summary = fmt.Sprintf("%s runs no pods: its plugins are binaries the container runtime runs once per pod sandbox, so it has no resident CPU or memory to measure", name)
		f.Evidence = []string{"no kube-system pod matches a known CNI (and no --cni-pods)"}
		return f
	}
	window := d.b.o.FootprintWindow
	idle, err := d.sampleFootprint(ctx, pods, window, nil)
	if err != nil {
		return result.Finding{Verdict: "failed", Summary: "the idle sample failed", Evidence: []string{err.Error()}}
	}
	load := func(ctx context.Context) {
		target := net.JoinHostPort(d.pods[podSrvB].Status.PodIP, strconv.Itoa(engine.DefaultPort))
		dur := window + 3*time.Second
		_, _, _ = d.exec(ctx, d.name(podCliA), []string{"/cnibench", "run", "--target", target, "--test", engine.TCPStream,
			"--flows", strconv.Itoa(footprintLoadFlows), "--duration", dur.String(), "--warmup", "0s", "--format", "json", "-q"}, nil)
	}
	loaded, err := d.sampleFootprint(ctx, pods, window, load)
	if err != nil {
		return result.Finding{Verdict: "failed", Summary: "the sample under load failed", Evidence: []string{err.Error()}}
	}
	return footprintFindingOn(pods, idle, loaded, window, []string{d.client.Name, d.server.Name})
}

// footprintFinding sums the samples of every pod into a finding that
// names the nodes summed.
func footprintFinding(pods []cni.PodRef, idle, loaded map[string]usage, window time.Duration) result.Finding {
	return footprintFindingOn(pods, idle, loaded, window, nil)
}

// footprintSum is the usage of a group of pods.
type footprintSum struct {
	pods                               int
	nodes                              []string
	idleCPU, loadCPU, idleMem, loadMem float64
}

func (s *footprintSum) add(node string, i, l usage) {
	s.pods++
	if !slices.Contains(s.nodes, node) {
		s.nodes = append(s.nodes, node)
	}
	s.idleCPU += i.millicores
	s.loadCPU += l.millicores
	s.idleMem += i.memBytes
	s.loadMem += l.memBytes
}

// usage says what the group uses: "30.0 mCPU and 150.0 MiB idle, 400.0
// mCPU and 170.0 MiB under …".
func (s *footprintSum) usage() string {
	return fmt.Sprintf("%.1f mCPU and %.1f MiB idle, %.1f mCPU and %.1f MiB under a %d-flow cross-node stream",
		s.idleCPU, s.idleMem/(1<<20), s.loadCPU, s.loadMem/(1<<20), footprintLoadFlows)
}

// footprintFindingOn sums the samples into a finding. With runNodes (the
// run's client and server nodes), the sums (cpu_millicores_idle, …) are
// of the pods on those nodes, the nodes the benchmark's traffic crosses,
// and the pods measured on other nodes (an operator, metrics.k8s.io) are
// summed apart (…_other_nodes); without, the sums are of every pod
// measured. Either way the summary names the nodes summed.
func footprintFindingOn(pods []cni.PodRef, idle, loaded map[string]usage, window time.Duration, runNodes []string) result.Finding {
	f := result.Finding{Verdict: "measured", Metrics: map[string]float64{}}
	var run, other footprintSum
	for _, p := range pods {
		i, iok := idle[string(p.UID)]
		l, lok := loaded[string(p.UID)]
		if !iok || !lok || i.err != "" || l.err != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s/%s on %s: not measured: %s", p.Namespace, p.Name, p.Node, cmp.Or(i.err, l.err, "no sample of it")))
			continue
		}
		if runNodes == nil || slices.Contains(runNodes, p.Node) {
			run.add(p.Node, i, l)
		} else {
			other.add(p.Node, i, l)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s/%s on %s: idle %.1f mCPU %.1f MiB, under load %.1f mCPU %.1f MiB",
			p.Namespace, p.Name, p.Node, i.millicores, i.memBytes/(1<<20), l.millicores, l.memBytes/(1<<20)))
	}
	f.Metrics["cni_pods"] = float64(len(pods))
	f.Metrics["cni_pods_measured"] = float64(run.pods + other.pods)
	if run.pods+other.pods == 0 {
		f.Verdict, f.Summary = "failed", "none of the CNI's pods could be measured"
		return f
	}
	where := "on node(s) " + strings.Join(run.nodes, ", ")
	if runNodes != nil {
		where = "on the run's nodes " + strings.Join(runNodes, " and ")
	}
	if run.pods > 0 {
		f.Metrics["cpu_millicores_idle"] = run.idleCPU
		f.Metrics["cpu_millicores_load"] = run.loadCPU
		f.Metrics["memory_bytes_idle"] = run.idleMem
		f.Metrics["memory_bytes_load"] = run.loadMem
		f.Summary = fmt.Sprintf("the CNI's %d pod(s) %s use %s (%s samples)", run.pods, where, run.usage(), window)
	} else {
		f.Summary = fmt.Sprintf("none of the CNI's pods %s could be measured", where)
	}
	if other.pods > 0 {
		f.Metrics["cni_pods_other_nodes"] = float64(other.pods)
		f.Metrics["cpu_millicores_idle_other_nodes"] = other.idleCPU
		f.Metrics["cpu_millicores_load_other_nodes"] = other.loadCPU
		f.Metrics["memory_bytes_idle_other_nodes"] = other.idleMem
		f.Metrics["memory_bytes_load_other_nodes"] = other.loadMem
		f.Summary += fmt.Sprintf("; its %d pod(s) on other nodes (%s), not in those sums, use %s", other.pods, strings.Join(other.nodes, ", "), other.usage())
	}
	return f
}

// sampleFootprint samples the pods' usage over window, with load running
// (if not nil) from a second before the window until its end.
func (d *Deployment) sampleFootprint(ctx context.Context, pods []cni.PodRef, window time.Duration, load func(context.Context)) (map[string]usage, error) {
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	loadDone := make(chan struct{})
	if load != nil {
		go func() { defer close(loadDone); load(lctx) }()
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		close(loadDone)
	}
	defer func() { stop(); <-loadDone }()
	byHelper, other := d.podsByHost(pods)
	out := map[string]usage{}
	first, err := d.readHosts(ctx, byHelper)
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	second, err := d.readHosts(ctx, byHelper)
	if err != nil {
		return nil, err
	}
	for h, uids := range byHelper {
		r := second[h]
		for uid, u := range cgroupUsage(first[h], r) {
			out[uid] = u
		}
		for _, uid := range uids {
			if _, ok := out[uid]; !ok {
				out[uid] = usage{err: cmp.Or(r.Error, first[h].Error, "not in the cgroup reading")}
			}
		}
	}
	for uid, u := range d.metricsUsage(ctx, other) {
		out[uid] = u
	}
	return out, nil
}

// metricsUsage reads pods on other nodes from metrics.k8s.io, when the
// cluster serves it: the metrics server's own window (its resolution,
// often 15 s) ends when it is read, so the figure covers the sample only
// if that window is not longer than --footprint-window.
func (d *Deployment) metricsUsage(ctx context.Context, pods []cni.PodRef) map[string]usage {
	out := map[string]usage{}
	if len(pods) == 0 {
		return out
	}
	// Asked once per run: the idle and the loaded samples both come here.
	d.metricsOnce.Do(func() {
		switch {
		case d.b.metrics == nil:
			d.noMetrics = "no metrics.k8s.io client"
		case !kube.MetricsAvailable(ctx, d.b.cs.Discovery()):
			d.noMetrics = "the cluster serves no metrics.k8s.io (no metrics-server)"
		}
	})
	why := d.noMetrics
	byNS := map[string][]cni.PodRef{}
	for _, p := range pods {
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	for ns, ps := range byNS {
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		var got map[string]kube.Usage
		var err error
		if why == "" {
			got, err = kube.PodMetrics(ctx, d.b.metrics, ns, names)
		}
		for _, p := range ps {
			u, ok := got[p.Name]
			switch {
			case why != "":
				out[string(p.UID)] = usage{err: "on node " + p.Node + ", which has no host pod of the run, and " + why}
			case err != nil:
				out[string(p.UID)] = usage{err: err.Error()}
			case !ok:
				out[string(p.UID)] = usage{err: "metrics.k8s.io has no sample of it yet"}
			default:
				out[string(p.UID)] = usage{millicores: u.CPUNanoCores / 1e6, memBytes: float64(u.MemoryBytes)}
			}
		}
	}
	return out
}

// cgroupUsage turns two readings into CPU over the interval and the
// second reading's memory working set.
func cgroupUsage(a, b agent.CgroupReport) map[string]usage {
	out := map[string]usage{}
	dt := float64(b.TimeUnixNano - a.TimeUnixNano)
	before := map[string]agent.PodCgroup{}
	for _, p := range a.Pods {
		before[p.UID] = p
	}
	for _, p := range b.Pods {
		q, ok := before[p.UID]
		switch {
		case p.Error != "" || !ok || q.Error != "":
			out[p.UID] = usage{err: strings.TrimSpace(cmp.Or(p.Error, q.Error, "missing from the first reading"))}
		case dt <= 0 || p.CPUUsageNanos < q.CPUUsageNanos:
			out[p.UID] = usage{err: "the counters went backwards (pod restarted?)"}
		default:
			out[p.UID] = usage{millicores: 1000 * float64(p.CPUUsageNanos-q.CPUUsageNanos) / dt, memBytes: float64(p.MemoryWorkingSetBytes)}
		}
	}
	return out
}

// readHosts reads the cgroups of the pods on each host pod's node (host
// pod → the UIDs of podsByHost).
func (d *Deployment) readHosts(ctx context.Context, byHelper map[string][]string) (map[string]agent.CgroupReport, error) {
	return d.readTargets(ctx, uidTargets(byHelper))
}

// uidTargets are the pods of podsByHost as readTargets' targets.
func uidTargets(byHelper map[string][]string) map[string]usageTarget {
	out := make(map[string]usageTarget, len(byHelper))
	for h, uids := range byHelper {
		out[h] = usageTarget{uids: uids}
	}
	return out
}

// podsByHost groups pods by the run's host pod on their node (host pod →
// their UIDs); other are those on nodes without one.
func (d *Deployment) podsByHost(pods []cni.PodRef) (byHelper map[string][]string, other []cni.PodRef) {
	byHelper = map[string][]string{}
	for _, p := range pods {
		switch p.Node {
		case d.client.Name:
			byHelper[podHostA] = append(byHelper[podHostA], string(p.UID))
		case d.server.Name:
			byHelper[podHostB] = append(byHelper[podHostB], string(p.UID))
		default:
			other = append(other, p)
		}
	}
	return byHelper, other
}
