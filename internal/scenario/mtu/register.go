package mtu

import (
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// flagPodMTUs is the scenario's flag.
const flagPodMTUs = "pod-mtus"

func init() {
	scenario.Register(scenario.Registration{
		Name:  ScenarioName,
		Usage: "pods' MTU right, at 1500, at 1450 and too large (ICMP fragmentation-needed passed or black-holed) on a jumbo wire (--mtu 9000)",
		Flags: flags,
	})
}

// flags registers --pod-mtus.
func flags(fs *pflag.FlagSet) scenario.Builder {
	settings := fs.String(flagPodMTUs, "", "mtu: comma-separated pod MTU settings correct, 1500, 1450, too-large (default all; too-large runs with ICMP fragmentation-needed passed and dropped)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		var o Options
		var err error
		if o.Settings, err = scenario.ListFlag(c, flagPodMTUs, *settings); err != nil {
			return nil, err
		}
		return New(o)
	}
}

// Shape draws one grouped bar chart per cell and metric: groups datapath
// and pod MTU setting, bars ICMP passed or dropped (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape {
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Categorical: &result.CategoricalShape{
			Groups: []string{"datapath", LabelPodMTU}, GroupHeaders: []string{"Datapath", "Pod MTU"},
			Series: LabelICMP, SeriesHeader: "ICMP frag. needed",
			Intro: "The pods' MTU on a jumbo wire (seed 002): correct (the wire's less the datapath's encapsulation: 8950 on vxlan, 9000 on veth-routing), " +
				"1500 and 1450 (the jumbo wire not detected), and too large (50 bytes above correct) with ICMP \"fragmentation needed\" passed (path-MTU discovery) or dropped on the nodes (a PMTU black hole). " +
				"Each cell records the path MTU the client detected when it connected, the one its kernel held after the cell, the ICMP the nodes generated, and the client's retransmissions; " +
				"a client that gave no result within its window and a bounded timeout is stopped and its repeat recorded failed (\"stalled: …\") with those counters. Median with 95 % CI.",
			Metrics: result.MetricsPerTest(func(test string) []string {
				if result.IsStream(test) {
					return []string{result.ThroughputBitsPerSec, result.CPUPctPer100Gbit, MetricDetected, MetricPMTU, MetricFragNeeded, MetricRetransSegs}
				}
				return []string{result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99, MetricDetected, MetricRetransSegs}
			}),
		},
		MetricTitles: map[string]string{
			MetricPodMTU:      "Pod MTU (read back)",
			MetricDetected:    "Path MTU detected at connect",
			MetricDetectedOff: "Detected path MTU less the correct one",
			MetricPMTU:        "Client's path MTU after the cell",
			MetricPMTULearnt:  "PMTU exception learnt",
			MetricFragNeeded:  "ICMP fragmentation-needed sent by the nodes",
			MetricUnreachRcvd: "ICMP unreachable received by the client",
			MetricRetransSegs: "Client TCP retransmissions",
			MetricServerBytes: "Bytes received by the server pod",
		},
	}
}
