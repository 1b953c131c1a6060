package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/pkg/result"
)

// Findings implements backend.Finder: the checks of seed 002 (CNI, MTU,
// NetworkPolicy, encryption on the wire) and the CNI's footprint, each a
// finding with its evidence. A check that cannot run is a "skipped"
// finding with the reason, never an error of the run.
func (d *Deployment) Findings(ctx context.Context, measured func(map[string]string) []result.Run) []result.Finding {
	ctx = d.kctx(ctx)
	want := d.b.o.Checks
	if len(want) == 0 {
		want = Checks
	}
	labels := map[string]string{"backend": Name, "cluster": d.b.cluster,
		"client_node": d.client.Name, "server_node": d.server.Name}
	maps.Copy(labels, d.cniLabels())
	var out []result.Finding
	for _, c := range Checks {
		if !slices.Contains(want, c) || ctx.Err() != nil {
			continue
		}
		var f result.Finding
		switch {
		case d.noHost != "" && (c == "mtu" || c == "encryption" || c == "cni_footprint"):
			// They read the nodes: their interfaces, a capture on the
			// wire, the CNI pods' cgroups.
			f = result.Finding{Verdict: "skipped", Summary: "needs the privileged host pods, which did not run: " + d.noHost}
		case c == "network_policy" && d.noPolicy != "":
			f = result.Finding{Verdict: "skipped", Summary: d.noPolicy}
		case c == "cni":
			f = d.checkCNI()
		case c == "mtu":
			f = d.checkMTU(measured)
		case c == "network_policy":
			f = d.checkPolicy(ctx)
		case c == "encryption":
			f = d.checkEncryption(ctx)
		case c == "cni_footprint":
			f = d.checkFootprint(ctx)
		}
		f.Check = c
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		for k, v := range labels {
			if _, ok := f.Labels[k]; !ok && v != "" {
				f.Labels[k] = v
			}
		}
		out = append(out, f)
	}
	return out
}

// checkCNI reports which CNI the cluster runs, its version and mode, and
// why cnibench thinks so (d.cni's evidence holds the settings the mode
// was read from).
func (d *Deployment) checkCNI() result.Finding {
	f := result.Finding{Verdict: "identified", Evidence: append([]string(nil), d.cni.Evidence...)}
	if d.conf != nil {
		if d.conf.Error != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("CNI configuration %s on %s: %s", d.b.o.CNIConfDir, d.client.Name, d.conf.Error))
		} else {
			f.Evidence = append(f.Evidence, fmt.Sprintf("CNI configuration in use on %s: %s (plugins %s)", d.client.Name, d.conf.InUse, strings.Join(d.conf.PluginsInUse, ", ")))
		}
	}
	f.Evidence = append(f.Evidence, d.upErrors...)
	// What else identifies the cluster (its version, kube-proxy's mode,
	// its name), and where each comes from.
	f.Evidence = append(f.Evidence, d.b.factsEvidence...)
	f.Evidence = append(f.Evidence, d.proxyModeEvidence...)
	switch {
	case d.cni.Name == "" || d.cni.Name == "unknown":
		f.Verdict = "unknown"
		f.Summary = "the CNI could not be identified from the kube-system pods or the nodes' CNI configuration"
		if d.noHost != "" {
			f.Summary += " (not read: no host pods)"
		}
	default:
		f.Summary = "the cluster's CNI is " + d.cni.Name
		if d.cni.Version != "" {
			f.Summary += " " + d.cni.Version
		}
		if d.cni.Mode != "" {
			f.Summary += " (" + d.cni.Mode + ")"
		}
		f.Labels = d.cniLabels()
	}
	return f
}

// checkMTU compares the pod interface's MTU with the node's and the
// encapsulation in use, and prices a wrong MTU with the matrix's
// cross-node stream against the node-to-node one.
func (d *Deployment) checkMTU(measured func(map[string]string) []result.Run) result.Finding {
	if d.podIf == nil || d.nodeIf == nil {
		return result.Finding{Verdict: "skipped", Summary: "the pod's or the node's interfaces could not be inspected", Evidence: d.upErrors}
	}
	podMTU, nodeMTU := d.podIf.DefaultRouteMTU(), d.nodeIf.AddrMTU()
	// The overhead the CNI reserves for the tunnels up on the node, over
	// the node address's family (cilium's IPsec from its configuration).
	encap, overhead, how := d.nodeIf.EncapsulationFor(d.cni.Name, strings.EqualFold(d.cni.Settings["enable-ipsec"], "true"))
	f := mtuVerdict(podMTU, nodeMTU, encap, overhead)
	f.Evidence = append(f.Evidence, fmt.Sprintf("encapsulation overhead %d bytes: %s (CNI %s)", overhead, how, d.cniOrUnknown()),
		fmt.Sprintf("client pod %s: default route MTU %d (its %s's)", d.name(podCliA), podMTU, d.podIf.DefaultRouteMTUFrom()),
		fmt.Sprintf("node %s: interface %s (holding %s) MTU %d", d.client.Name, d.nodeIf.AddrLink(), d.nodeIf.Addr, nodeMTU))
	if d.conf != nil && d.conf.MTU > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("CNI configuration sets mtu %d", d.conf.MTU))
	}
	f.Metrics = map[string]float64{"pod_mtu": float64(podMTU), "node_mtu": float64(nodeMTU), "encap_overhead_bytes": float64(overhead)}
	// The cost: one stream across nodes through the pod network against
	// the same between the nodes' host networks.
	pod := medianOf(measured(map[string]string{"datapath": d.cniName(), "path": PathCrossNode, "test": engine.TCPStream, "flows": "1"}), result.ThroughputBitsPerSec)
	host := medianOf(measured(map[string]string{"datapath": DatapathBaseline, "path": PathNodeToNode, "test": engine.TCPStream, "flows": "1"}), result.ThroughputBitsPerSec)
	if pod > 0 && host > 0 {
		cost := 100 * (1 - pod/host)
		f.Metrics["pod_throughput_bits_per_sec"] = pod
		f.Metrics["host_throughput_bits_per_sec"] = host
		f.Metrics["throughput_cost_pct"] = cost
		f.Evidence = append(f.Evidence, fmt.Sprintf("tcp_stream ×1 cross-node: pod network %s, host network %s (%.1f %% less through the pod network; median of the matrix's repeats)",
			result.Format(result.ThroughputBitsPerSec, pod), result.Format(result.ThroughputBitsPerSec, host), cost))
	} else {
		f.Evidence = append(f.Evidence, "no tcp_stream ×1 cross-node and node-to-node runs to price the MTU with (add tcp_stream to --tests)")
	}
	return f
}

// cniOrUnknown is the CNI's name, "unknown" if none was identified.
func (d *Deployment) cniOrUnknown() string {
	if d.cni.Name == "" {
		return "unknown"
	}
	return d.cni.Name
}

// mtuVerdict judges a pod MTU against the node's MTU less the
// encapsulation's overhead.
func mtuVerdict(podMTU, nodeMTU int, encap []string, overhead int) result.Finding {
	want := nodeMTU - overhead
	how := "no encapsulation on the node"
	if len(encap) > 0 {
		how = fmt.Sprintf("encapsulation %s (%d bytes)", strings.Join(encap, ", "), overhead)
	}
	switch {
	case podMTU <= 0 || nodeMTU <= 0:
		return result.Finding{Verdict: "skipped", Summary: "an MTU could not be read"}
	case podMTU > want:
		return result.Finding{Verdict: "misconfigured", Summary: fmt.Sprintf("pod MTU %d exceeds node MTU %d less %s = %d: full-size packets are fragmented or dropped", podMTU, nodeMTU, how, want)}
	case podMTU < want:
		return result.Finding{Verdict: "misconfigured", Summary: fmt.Sprintf("pod MTU %d is %d bytes below node MTU %d less %s = %d: every packet carries less payload than the wire allows", podMTU, want-podMTU, nodeMTU, how, want)}
	}
	return result.Finding{Verdict: "correct", Summary: fmt.Sprintf("pod MTU %d = node MTU %d less %s", podMTU, nodeMTU, how)}
}

// medianOf is the median of metric in the first run that has it.
func medianOf(runs []result.Run, metric string) float64 {
	for _, r := range runs {
		if s, ok := r.Summary[metric]; ok && s.N > 0 {
			return s.Median
		}
	}
	return 0
}
