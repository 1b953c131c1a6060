package l4lb

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

func init() {
	legacy := legacyShape()
	scenario.Register(scenario.Registration{
		Name:        ScenarioName,
		Usage:       "north-south load balancing: a BPF load balancer's modes (snat, dsr) × transports × host firewall, with per-node CPU",
		Flags:       flags,
		Metrics:     metrics,
		LegacyShape: &legacy,
	})
}

// flags registers --lb-modes, --lb-cpu and --syn-flood.
func flags(fs *pflag.FlagSet) scenario.Builder {
	modes := fs.String("lb-modes", "", "l4lb: comma-separated modes LB-TRANSPORT[-fw], LB snat, dsr or kubeproxy, TRANSPORT direct or vxlan, e.g. snat-vxlan,dsr-direct-fw,kubeproxy-vxlan (default: all twelve, and ipv6, recorded skipped)")
	cpus := fs.String("lb-cpu", "", "l4lb: comma-separated CPU placements: shared (no steering) and/or split (the LB node's receive processing on one CPU, everything else on another; needs --pin same) (default: shared)")
	flood := fs.Int("syn-flood", 0, "l4lb: SYN/s the refused client floods the VIP with during every cell of an extra point per firewall-on mode (0: off)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		o := Options{SYNFlood: *flood}
		var err error
		if o.Modes, err = scenario.ListFlag(c, "lb-modes", *modes); err != nil {
			return nil, err
		}
		if o.CPUs, err = scenario.ListFlag(c, "lb-cpu", *cpus); err != nil {
			return nil, err
		}
		// Refused here, not cell by cell once the lab is up.
		if pin, ok := c.BackendConfig["pin"]; ok && pin != "same" && slices.Contains(o.CPUs, CPUSplit) {
			return nil, fmt.Errorf("--lb-cpu split: needs --pin same (the client and the backends on one CPU, the LB's receive processing on another); this run has --pin %s", pin)
		}
		return New(o)
	}
}

// Shape draws one grouped bar chart per cell and metric: groups LB mode +
// transport + CPU placement + SYN flood, bars firewall off/on
// (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape { return shape() }

func shape() result.ScenarioShape {
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Categorical: &result.CategoricalShape{
			Groups: []string{LabelLBMode, LabelTransport, LabelLBCPU, LabelSYNFlood}, GroupHeaders: []string{"LB mode", "Transport", "LB CPU", "SYN flood /s"},
			Series: LabelFirewall, SeriesHeader: "Firewall",
			Intro: "North-south load balancing (seed 003): an external client reaches the VIP through a BPF load-balancer node in front of two workers. " +
				"Groups: LB mode (snat: replies return through the LB; dsr: the worker answers the client directly; kubeproxy: nftables DNAT + masquerade with conntrack, no BPF), LB-to-worker transport (direct, vxlan), " +
				"LB CPU (shared; split: the LB's receive processing alone on one CPU) and the refused client's SYN flood rate; bars: host firewall off and on " +
				introTail,
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
				return append(out, MetricLBCPU, MetricWorkersCPU, result.HostCPUPct)
			}),
		},
		MetricTitles: map[string]string{
			MetricLBCPU:      "LB node CPU",
			MetricWorkersCPU: "Workers' CPU",
		},
	}
}

// introTail ends the section's intro, today's and the legacy one.
const introTail = "(on: only the client's prefix is allowed; a second client connects during every cell and must be refused). Every cell proved its mode from the LB's and workers' counters. " +
	"Node CPU is receive processing charged to the node's network namespaces by BPF accounting plus the CPU of the processes in its pods, in % of one core over the client's run; median with 95 % CI."

// legacyShape draws the documents written before results carried their
// shape: the scenario had then neither the kubeproxy mode nor the CPU
// placement and the SYN flood, so their two groups and the intro naming
// them are left out.
func legacyShape() result.ScenarioShape {
	sh := shape()
	c := sh.Categorical
	c.Groups, c.GroupHeaders = slices.Clip(c.Groups[:2]), slices.Clip(c.GroupHeaders[:2])
	c.Intro = "North-south load balancing (seed 003): an external client reaches the VIP through a BPF load-balancer node in front of two workers. " +
		"Groups: LB mode (snat: replies return through the LB; dsr: the worker answers the client directly) and LB-to-worker transport (direct, vxlan); bars: host firewall off and on " +
		introTail
	return sh
}
