package l4lb

import (
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

func init() {
	scenario.Register(scenario.Registration{
		Name:  ScenarioName,
		Usage: "north-south load balancing: a BPF load balancer's modes (snat, dsr) × transports × host firewall, with per-node CPU",
		Flags: flags,
	})
}

// flags registers --lb-modes.
func flags(fs *pflag.FlagSet) scenario.Builder {
	modes := fs.String("lb-modes", "", "l4lb: comma-separated modes LB-TRANSPORT[-fw], LB snat or dsr, TRANSPORT direct or vxlan, e.g. snat-vxlan,dsr-direct-fw (default: all eight, and ipv6, recorded skipped)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		var o Options
		var err error
		if o.Modes, err = scenario.ListFlag(c, "lb-modes", *modes); err != nil {
			return nil, err
		}
		return New(o)
	}
}

// Shape draws one grouped bar chart per cell and metric: groups LB mode +
// transport, bars firewall off/on (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape {
	return result.ScenarioShape{
		Scenario: ScenarioName,
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
				return append(out, MetricLBCPU, MetricWorkersCPU, result.HostCPUPct)
			}),
		},
		MetricTitles: map[string]string{
			MetricLBCPU:      "LB node CPU",
			MetricWorkersCPU: "Workers' CPU",
		},
	}
}
