package report

import "github.com/cnibench/cnibench/pkg/result"

// The legacy fallback: how the report drew scenarios before results
// documents carried their shape (result.Set.Shape, written by the suite
// from the scenario). Documents written since say it themselves and never
// reach these tables; a new scenario never needs an entry here. The
// entries are recognised by their labels, as the report always did.

// Labels of the legacy scenarios' runs.
const (
	LabelMechanism      = "mechanism"
	LabelTraversal      = "traversal"
	LabelImplementation = "implementation"
	LabelServices       = "services"
	LabelLBMode         = "lb_mode"
	LabelTransport      = "transport"
	LabelFirewall       = "firewall"
	LabelEncryption     = "encryption"
	LabelCipher         = "cipher"
	LabelPodMTU         = "pod_mtu"
)

// NoneMechanism is the legacy filter and services scenarios' baseline:
// nothing loaded.
const NoneMechanism = "none"

// FilterMetrics are the legacy egress-filter scenario's per-point costs,
// in the order the report shows them.
var FilterMetrics = []string{
	"filter_setup_seconds", "filter_update_add_seconds", "filter_update_remove_seconds",
	"filter_teardown_seconds", "filter_kernel_bytes", "filter_loader_rss_bytes",
}

// ServiceMetrics are the legacy services scenario's per-point costs.
var ServiceMetrics = []string{"svc_setup_seconds", "svc_teardown_seconds"}

// legacyShapes, in the order they are tried: the categorical ones are
// recognised by their first group label, the sweeps by their series label.
var legacyShapes = []result.ScenarioShape{
	{
		Scenario: "l4lb",
		Categorical: &result.CategoricalShape{
			Groups: []string{LabelLBMode, LabelTransport}, GroupHeaders: []string{"LB mode", "Transport"},
			Series: LabelFirewall, SeriesHeader: "Firewall",
			Intro: "North-south load balancing (seed 003): an external client reaches the VIP through a BPF load-balancer node in front of two workers. " +
				"Groups: LB mode (snat: replies return through the LB; dsr: the worker answers the client directly) and LB-to-worker transport (direct, vxlan); bars: host firewall off and on " +
				"(on: only the client's prefix is allowed; a second client connects during every cell and must be refused). Every cell proved its mode from the LB's and workers' counters. " +
				"Node CPU is receive processing charged to the node's network namespaces by BPF accounting plus the CPU of the processes in its pods, in % of one core over the client's run; median with 95 % CI.",
			Metrics: result.MetricsPerTest(func(test string) []string {
				var out []string
				if result.IsStream(test) {
					out = append(out, result.ThroughputBitsPerSec)
				} else {
					out = append(out, result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99)
				}
				if test == result.TestHTTP {
					out = append(out, result.Errors)
				}
				return append(out, "lb_node_cpu_pct", "lb_workers_cpu_pct", result.HostCPUPct)
			}),
		},
		MetricTitles: map[string]string{"lb_node_cpu_pct": "LB node CPU", "lb_workers_cpu_pct": "Workers' CPU"},
	},
	{
		Scenario: "encryption",
		Categorical: &result.CategoricalShape{
			Groups: []string{LabelEncryption, LabelCipher}, GroupHeaders: []string{"Encryption", "Cipher"},
			Series: LabelPodMTU, SeriesHeader: "Pod MTU",
			Intro: "Pod traffic between the nodes in clear and encrypted (seeds 000 and 002); bars: the pods' MTU lowered by the tunnel's overhead, or left at the wire's (the misconfiguration seed 002 warns about). " +
				"Userspace implementations are labelled as such: their crypto runs in a process and every packet crosses a TUN device, so their costs are not the kernel's. " +
				"Every cell carries its proof from a capture on node 2's wire: encrypted cells saw the tunnel's packets and never the payload marker; the unencrypted ones saw the marker (negative control). Median with 95 % CI.",
			Metrics: result.MetricsPerTest(func(test string) []string {
				if result.IsStream(test) {
					return []string{result.ThroughputBitsPerSec, result.CPUPctPer100Gbit, result.HostCPUPct, "wire_marker_frames"}
				}
				return []string{result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99, result.HostCPUPct}
			}),
		},
		MetricTitles: map[string]string{"wire_marker_frames": "Frames with the payload marker in clear"},
	},
	{
		Scenario: "egress-filter",
		Sweep: &result.SweepShape{
			X: LabelRules, XText: "rules", Series: LabelMechanism, SeriesHeader: "Mechanism", Variant: LabelTraversal, Baseline: NoneMechanism,
			Intro: "Every metric against the number of deny rules (log scale), one line per mechanism (" + NoneMechanism +
				" = nothing loaded, dashed); median over repeats with its 95 % CI. Points that were too large, skipped or failed are named under the chart and in the tables.",
			PointMetrics: FilterMetrics,
			PointLead:    "Loading the filter: set-up until a denied probe is proven dropped, one update (add and remove one /32), tear-down and memory.",
		},
		MetricTitles: map[string]string{
			"filter_setup_seconds":         "Set-up until enforced",
			"filter_update_add_seconds":    "Update: add one CIDR",
			"filter_update_remove_seconds": "Update: remove one CIDR",
			"filter_teardown_seconds":      "Tear-down",
			"filter_kernel_bytes":          "Kernel memory of the rules",
			"filter_loader_rss_bytes":      "Loader peak RSS",
		},
	},
	{
		Scenario: "services",
		Sweep: &result.SweepShape{
			X: LabelServices, XText: "services", Series: LabelImplementation, SeriesHeader: "Implementation", Baseline: NoneMechanism,
			Intro: "Every metric against the number of services in the table (log scale; the measured service is the last one kube-proxy's KUBE-SERVICES scans), one line per implementation (" + NoneMechanism + " = no service, the client takes the backends' addresses in turn, dashed); " +
				"median over repeats with its 95 % CI. Each cell proved its path (iptables: every connection to the VIP DNATed in conntrack; eBPF: its own translations counted, no VIP and no NAT in conntrack). " +
				"Points that were skipped or failed are named under the chart and in the tables.",
			PointMetrics: ServiceMetrics,
			PointLead:    "Loading the services: time to load the table (both nodes' rules for iptables, the maps and attachments for eBPF), and to remove it.",
		},
		MetricTitles: map[string]string{
			"svc_setup_seconds":    "Loading the services",
			"svc_teardown_seconds": "Removing the services",
		},
	},
}

// legacyShapeOf returns the legacy shape whose key label scen's runs
// carry, for scen.
func legacyShapeOf(scen string, sr []*result.Run) (result.ScenarioShape, bool) {
	for _, sh := range legacyShapes {
		key := ""
		switch {
		case sh.Categorical != nil:
			key = sh.Categorical.Groups[0]
		case sh.Sweep != nil:
			key = sh.Sweep.Series
		}
		if v := values(sr, key); len(v) > 1 || (len(v) == 1 && v[0] != "") {
			sh.Scenario = scen
			return sh, true
		}
	}
	return result.ScenarioShape{}, false
}
