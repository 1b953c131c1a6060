package cluster

// What serves the cluster's ClusterIP services, and kube-proxy's own CPU
// and memory (issue 36: services at scale through kube-proxy's modes and
// the CNIs that replace it).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/cni"
)

// LabelServiceProxy is the run label naming what serves ClusterIP
// services (cni.ServiceProxy: kube-proxy-iptables, kube-proxy-nftables,
// cilium-kpr, calico-ebpf, …), on the runs of a scenario that asks for it
// (backend.ScenarioSpec.ServiceProxy).
const LabelServiceProxy = "service_proxy"

// DefaultKubeProxyCgroup is where kube-proxy's cgroup is when it runs
// outside pods: a systemd unit's, below each hierarchy ({node} is
// replaced by the node's name).
const DefaultKubeProxyCgroup = "system.slice/kube-proxy.service"

// Usage metrics of Access.ProxyUsage.
const (
	ProxyCPU    = "proxy_cpu_millicores"
	ProxyMemory = "proxy_memory_bytes"
	ProxyWindow = "proxy_usage_window_seconds"
)

// serviceProxy is what serves ClusterIP services here and why: the CNI's
// replacement, else kube-proxy in the mode its node answered (else as the
// API shows it).
func (d *Deployment) serviceProxy() (string, []string) {
	mode := d.proxyMode
	if mode == "" {
		mode = d.b.facts.KubeProxyMode
	}
	if mode == cni.KubeProxyNone && d.noHost != "" {
		// No kube-proxy pod, and no host pod to ask the node: a kube-proxy
		// outside pods may still run.
		mode = ""
	}
	return cni.ServiceProxy(d.cni, mode)
}

// serviceProxyLabels are LabelServiceProxy when the run's scenario asked
// for it.
func (d *Deployment) serviceProxyLabels() map[string]string {
	if !d.labelServiceProxy {
		return nil
	}
	sp, _ := d.serviceProxy()
	return map[string]string{LabelServiceProxy: sp}
}

// serviceScaleAccess fills a's fields of services at scale.
func (d *Deployment) serviceScaleAccess(a *Access) {
	a.ServiceProxy, a.ServiceProxyEvidence = d.serviceProxy()
	a.ProxyUsage = d.proxyUsage
	a.APIQPS, a.APIBurst = d.b.qps, d.b.burst
}

// usageTarget is what to read on one node: pods by UID, cgroups by path.
type usageTarget struct {
	uids, paths []string
}

// kubeProxyTargets finds kube-proxy on the run's two nodes (host pod →
// what to read): its pods (kube-system), else, when the node's kube-proxy
// answered (it runs outside pods), the cgroup o.KubeProxyCgroup names. nil
// and why when there is nothing to read.
func (d *Deployment) kubeProxyTargets(ctx context.Context) (map[string]usageTarget, string, error) {
	if d.noHost != "" {
		return nil, "no host pods to read the nodes' cgroups (" + d.noHost + ")", nil
	}
	pods, err := cni.KubeProxyPods(ctx, d.b.cs)
	if err != nil {
		return nil, "", err
	}
	if byHelper, _ := d.podsByHost(cni.PodRefs(pods)); len(byHelper) > 0 {
		return uidTargets(byHelper), "", nil
	}
	if d.proxyMode == "" {
		return nil, "no kube-proxy runs on the run's nodes (no pod in kube-system, and the client node's " + agent.KubeProxyMetricsURL + " did not answer)", nil
	}
	out := map[string]usageTarget{}
	tmpl := cmp.Or(d.b.o.KubeProxyCgroup, DefaultKubeProxyCgroup)
	for h, node := range map[string]string{podHostA: d.client.Name, podHostB: d.server.Name} {
		out[h] = usageTarget{paths: []string{strings.ReplaceAll(tmpl, "{node}", node)}}
	}
	return out, "", nil
}

// readTargets reads every host's targets: pods keyed by UID, cgroups by
// "cgroup " + path (so that cgroupUsage diffs both).
func (d *Deployment) readTargets(ctx context.Context, targets map[string]usageTarget) (map[string]agent.CgroupReport, error) {
	out := map[string]agent.CgroupReport{}
	for _, h := range slices.Sorted(maps.Keys(targets)) {
		t := targets[h]
		args := []string{"cgroup", "--root", hostCgroupRoot}
		for _, u := range slices.Sorted(slices.Values(t.uids)) {
			args = append(args, "--pod-uid", u)
		}
		for _, p := range t.paths {
			args = append(args, "--cgroup", p)
		}
		var r agent.CgroupReport
		if err := d.agentJSON(ctx, h, args, &r); err != nil {
			return nil, err
		}
		for _, c := range r.Cgroups {
			c.UID = "cgroup " + c.Path
			r.Pods = append(r.Pods, c)
		}
		out[h] = r
	}
	return out, nil
}

// proxyUsage runs fn and measures kube-proxy's CPU over it and its memory
// after it, summed over the run's two nodes (ProxyCPU, ProxyMemory,
// ProxyWindow): its pods' cgroups, or, outside pods, the cgroup
// Options.KubeProxyCgroup names. why says what was left out or why nothing
// was measured; err is fn's.
func (d *Deployment) proxyUsage(ctx context.Context, fn func(context.Context) error) (map[string]float64, string, error) {
	targets, why, err := d.kubeProxyTargets(ctx)
	if err != nil {
		return nil, "kube-proxy not looked for: " + firstLine(err.Error()), fn(ctx)
	}
	if targets == nil {
		return nil, why, fn(ctx)
	}
	first, second, el, why, err := d.readAround(ctx, "kube-proxy's", targets, fn)
	if why != "" {
		return nil, why, err
	}
	cpu, mem, read, left := sumUsage(first, second)
	slices.Sort(left)
	if read == 0 {
		return nil, "kube-proxy's cgroups not found: " + strings.Join(left, "; "), err
	}
	m := map[string]float64{ProxyCPU: cpu, ProxyMemory: mem, ProxyWindow: el.Seconds()}
	if len(left) > 0 {
		why = "left out: " + strings.Join(left, "; ")
	}
	return m, why, err
}

// validKubeProxyCgroup checks Options.KubeProxyCgroup.
func validKubeProxyCgroup(tmpl string) error {
	if tmpl == "" {
		return nil
	}
	if !agent.ValidCgroupPath(strings.ReplaceAll(tmpl, "{node}", "node")) {
		return fmt.Errorf("--kube-proxy-cgroup %q: not a cgroup path below a hierarchy (relative, no '..', printable; {node} is the node's name), e.g. %s", tmpl, DefaultKubeProxyCgroup)
	}
	return nil
}

// MaxAPIQPS bounds Options.APIQPS: a client past it is a load test of the
// API server, not a benchmark's set-up.
const MaxAPIQPS = 5000

// validAPIRate checks Options.APIQPS and APIBurst (0: the default).
func validAPIRate(qps float64, burst int) error {
	switch {
	case qps < 0 || qps > MaxAPIQPS || qps != qps:
		return fmt.Errorf("--api-qps %g: must be between 1 and %d requests/s (default 50)", qps, MaxAPIQPS)
	case qps > 0 && qps < 1:
		return fmt.Errorf("--api-qps %g: must be at least 1 request/s", qps)
	case burst < 0 || burst > 2*MaxAPIQPS:
		return fmt.Errorf("--api-burst %d: must be between 1 and %d (default 100)", burst, 2*MaxAPIQPS)
	}
	return nil
}

// sumUsage sums the CPU over the interval and the memory of every pod and
// cgroup of two readings (host pod → report), cgroupUsage's; read counts
// those summed, left says which were not and why ("pod UID: …", or
// "cgroup PATH: …" for readTargets' cgroups).
func sumUsage(first, second map[string]agent.CgroupReport) (cpu, mem float64, read int, left []string) {
	for h := range second {
		for id, u := range cgroupUsage(first[h], second[h]) {
			if u.err != "" {
				if !strings.HasPrefix(id, "cgroup ") {
					id = "pod " + id
				}
				left = append(left, id+": "+u.err)
				continue
			}
			read++
			cpu += u.millicores
			mem += u.memBytes
		}
	}
	return cpu, mem, read, left
}

// readAround reads targets' cgroups before and after fn and times fn;
// why (naming whose cgroups) says why they could not be read, err is
// fn's.
func (d *Deployment) readAround(ctx context.Context, whose string, targets map[string]usageTarget, fn func(context.Context) error) (
	first, second map[string]agent.CgroupReport, el time.Duration, why string, err error) {
	first, readErr := d.readTargets(ctx, targets)
	t0 := time.Now()
	err = fn(ctx)
	el = time.Since(t0)
	if readErr == nil {
		second, readErr = d.readTargets(ctx, targets)
	}
	if readErr != nil {
		return nil, nil, el, whose + " cgroups could not be read: " + firstLine(readErr.Error()), err
	}
	return first, second, el, "", err
}
