package encrypt

import (
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// flagEncrypt is the scenario's flag; it also selects the scenario
// without --scenario (`--encrypt wireguard`).
const flagEncrypt = "encrypt"

func init() {
	legacy := shape()
	scenario.Register(scenario.Registration{
		Name:        ScenarioName,
		Usage:       "pod traffic between the nodes in clear, through WireGuard and through IPsec (kernel and userspace), proven on the wire",
		Flags:       flags,
		Selects:     []string{flagEncrypt},
		Metrics:     metrics,
		LegacyShape: &legacy,
	})
}

// flags registers --encrypt.
func flags(fs *pflag.FlagSet) scenario.Builder {
	families := fs.String(flagEncrypt, "", "run the encryption scenario: comma-separated families none, wireguard, ipsec (each with its kernel and userspace implementations; none always runs as the baseline and negative control)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		var o Options
		var err error
		if o.Families, err = scenario.ListFlag(c, flagEncrypt, *families); err != nil {
			return nil, err
		}
		return New(o)
	}
}

// Shape draws one grouped bar chart per cell and metric: groups
// encryption + cipher, bars the pods' MTU (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape { return shape() }

// shape is the scenario's report shape, whatever its options; documents
// written before results carried it are drawn with it too (LegacyShape).
func shape() result.ScenarioShape {
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Categorical: &result.CategoricalShape{
			Groups: []string{LabelEncryption, LabelCipher}, GroupHeaders: []string{"Encryption", "Cipher"},
			Series: LabelPodMTU, SeriesHeader: "Pod MTU",
			Intro: "Pod traffic between the nodes in clear and encrypted (seeds 000 and 002); bars: the pods' MTU lowered by the tunnel's overhead, or left at the wire's (the misconfiguration seed 002 warns about). " +
				"Userspace implementations are labelled as such: their crypto runs in a process and every packet crosses a TUN device, so their costs are not the kernel's. " +
				"Every cell carries its proof from a capture on node 2's wire: encrypted cells saw the tunnel's packets and never the payload marker; the unencrypted ones saw the marker (negative control). Median with 95 % CI.",
			Metrics: result.MetricsPerTest(func(test string) []string {
				if result.IsStream(test) {
					return []string{result.ThroughputBitsPerSec, result.CPUPctPer100Gbit, result.HostCPUPct, MetricWireMarker}
				}
				return []string{result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99, result.HostCPUPct}
			}),
		},
		MetricTitles: map[string]string{
			MetricWireMarker: "Frames with the payload marker in clear",
		},
	}
}
