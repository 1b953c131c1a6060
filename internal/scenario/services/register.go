package services

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// QuickServices are the service counts without --services under the quick
// profile.
var QuickServices = []int{1, 1000}

func init() {
	legacy := shape()
	scenario.Register(scenario.Registration{
		Name:        ScenarioName,
		Usage:       "services at scale: kube-proxy's iptables and eBPF service load balancing × service-table sizes",
		Flags:       flags,
		Metrics:     metrics,
		LegacyShape: &legacy,
	})
}

// flags registers --implementations and --services.
func flags(fs *pflag.FlagSet) scenario.Builder {
	impls := fs.String("implementations", "", "services: comma-separated service implementations (default: all: "+strings.Join(Implementations, ",")+")")
	svcs := fs.String("services", "", "services: comma-separated service counts (default: 1,1000 with the quick profile, 1,100,1000,10000 with standard)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		var o Options
		var err error
		if o.Implementations, err = scenario.ListFlag(c, "implementations", *impls); err != nil {
			return nil, err
		}
		if o.Services, err = scenario.IntsFlag(c, "services", *svcs); err != nil {
			return nil, err
		}
		if o.Services == nil && c.Profile == "quick" {
			o.Services = slices.Clone(QuickServices)
		}
		s, err := New(o)
		if err != nil {
			return nil, err
		}
		var co ClusterOptions
		if c.ClusterScale {
			co.MaxServices = ClusterScaleMaxServices
		}
		s.SetBackend(c.Backend, co)
		return s, nil
	}
}

// ServiceMetrics are the per-point costs of a services point.
var ServiceMetrics = []string{SvcSetupSeconds, SvcTeardownSeconds}

// Shape draws the scenario against the number of services, one line per
// implementation (scenario.Shaper); on a cluster, clusterShape's, one line
// per service proxy.
func (s *Scenario) Shape() result.ScenarioShape {
	if s.backend == cluster.Name {
		return clusterShape()
	}
	return shape()
}

// shape is the scenario's report shape on the lab, whatever its options;
// documents written before results carried it are drawn with it too
// (LegacyShape), cluster points of issue 21 included.
func shape() result.ScenarioShape {
	titles := maps.Clone(clusterTitles)
	titles[SvcSetupSeconds] = "Loading the services"
	titles[SvcTeardownSeconds] = "Removing the services"
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Sweep: &result.SweepShape{
			X: LabelServices, XText: "services", Series: LabelImplementation, SeriesHeader: "Implementation", Baseline: ImplNone,
			Intro: "Every metric against the number of services in the table (log scale; the measured service is the last one kube-proxy's KUBE-SERVICES scans), one line per implementation (" + ImplNone + " = no service, the client takes the backends' addresses in turn, dashed); " +
				"median over repeats with its 95 % CI. Each cell proved its path (iptables: every connection to the VIP DNATed in conntrack; eBPF: its own translations counted, no VIP and no NAT in conntrack). " +
				"Points that were skipped or failed are named under the chart and in the tables.",
			PointMetrics: ServiceMetrics,
			PointLead:    "Loading the services: time to load the table (both nodes' rules for iptables, the maps and attachments for eBPF), and to remove it.",
		},
		MetricTitles: titles,
	}
}
