package egress

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/incluster"
	"github.com/cnibench/cnibench/pkg/result"
)

// QuickRules are the rule counts without --rules under the quick profile.
var QuickRules = []int{10, 1000}

// NoneMechanism is the baseline mechanism: nothing loaded.
const NoneMechanism = "none"

func init() {
	legacy := shape()
	scenario.Register(scenario.Registration{
		Name:        ScenarioName,
		Usage:       "egress filtering at scale: filter mechanisms × deny-set sizes, set-up and update costs, traffic through the filter",
		Flags:       flags,
		Metrics:     metrics(),
		LegacyShape: &legacy,
	})
}

// flags registers --mechanisms, --rules and --filter-traversal.
func flags(fs *pflag.FlagSet) scenario.Builder {
	mechs := fs.String("mechanisms", "", "egress-filter: comma-separated filter mechanisms (default: all: "+strings.Join(filter.Mechanisms(), ",")+")")
	rules := fs.String("rules", "", "egress-filter: comma-separated deny-set sizes (default: 10,1000 with the quick profile, 10,100,1000,10000,100000,1000000 with standard)")
	trav := fs.String("filter-traversal", "", "egress-filter: every-packet and/or new-connection (a leading 'ct state established accept'); default every-packet")
	wait := fs.Duration("policy-wait", time.Minute, "egress-filter on a cluster: how long a point waits for its deny to be enforced (and lifted) before it is 'not enforced'; a larger deny set waits 600µs per rule when that is longer (10m at 1000000), at most 30m")
	denied := fs.String("egress-denied", "", "egress-filter on a cluster: `IP:PORT` of a cnibench serve outside the cluster for the deny to cover, instead of the run's second server pod (with --egress-allowed; for CNIs whose CIDR rules do not select pods, e.g. Cilium)")
	allowed := fs.String("egress-allowed", "", "egress-filter on a cluster: `IP:PORT` of a cnibench serve outside the cluster that the deny must not cut and the cells run against (with --egress-denied)")
	chunk := fs.Int("policy-chunk", 0, "egress-filter on a cluster: the most deny CIDRs in one policy object (default 50000, the seed's split; etcd refuses requests above 1.5 MiB)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		o := ScenarioOptions{Seed: c.Seed}
		var err error
		if o.Mechanisms, err = scenario.ListFlag(c, "mechanisms", *mechs); err != nil {
			return nil, err
		}
		if o.Rules, err = scenario.IntsFlag(c, "rules", *rules); err != nil {
			return nil, err
		}
		if o.Rules == nil && c.Profile == "quick" {
			o.Rules = slices.Clone(QuickRules)
		}
		if o.Traversals, err = scenario.ListFlag(c, "filter-traversal", *trav); err != nil {
			return nil, err
		}
		if c.FlagChanged("policy-chunk") && *chunk < 1 {
			return nil, fmt.Errorf("--policy-chunk %d: must be at least 1", *chunk)
		}
		s, err := NewScenario(o)
		if err != nil {
			return nil, err
		}
		if *wait < time.Second || *wait > 30*time.Minute {
			return nil, fmt.Errorf("--policy-wait %s: must be between 1s and 30m", *wait)
		}
		co := incluster.Options{Chunk: *chunk, Wait: *wait}
		if co.Denied, co.Allowed, err = incluster.ParseOutside(*denied, *allowed); err != nil {
			return nil, err
		}
		if co.Outside() && c.Backend != backendKubernetes {
			return nil, fmt.Errorf("--egress-denied and --egress-allowed: only for --backend %s (the lab's servers are its own)", backendKubernetes)
		}
		if c.ClusterScale {
			co.MaxRules = incluster.ScaleClusterMaxRules
		}
		s.SetBackend(c.Backend, co)
		return s, nil
	}
}

// Config records the scenario's options in the runs' config
// (scenario.Configer).
func (s *Scenario) Config() map[string]string {
	rules := make([]string, len(s.o.Rules))
	for i, n := range s.o.Rules {
		rules[i] = strconv.Itoa(n)
	}
	c := map[string]string{
		"mechanisms":       strings.Join(s.o.Mechanisms, ","),
		"rules":            strings.Join(rules, ","),
		"filter_traversal": strings.Join(s.o.Traversals, ","),
		"filter_seed":      strconv.FormatUint(s.o.Seed, 10),
		"scenario_cells":   "per point: udp_stream (max rate), udp_stream --rate " + scenario.FixedRate + " (label rate), tcp_stream, tcp_rr, icmp_echo; on the lab also udp_stream --udp-handshake (label " + LabelUDPHandshake + "); cross-node, 1 flow",
	}
	if s.cluster.Outside() {
		c["filter_servers"] = "outside the cluster: denied " + s.cluster.Denied.String() + ", allowed " + s.cluster.Allowed.String()
	}
	return c
}

// FilterMetrics are the per-point costs of loading a filter, in the order
// the report shows them.
var FilterMetrics = []string{
	filter.SetupSeconds, filter.UpdateAddSeconds, filter.UpdateRemoveSeconds,
	filter.TeardownSeconds, filter.KernelBytes, filter.LoaderRSSBytes,
	// On a cluster: what the deny set was sent as, cnibench's own memory
	// while it sent it, and the agents' CPU and memory meanwhile.
	incluster.MetricPolicyObjects, incluster.MetricPolicyBytes, filter.SuitePeakRSSBytes,
	incluster.MetricCNICPU, incluster.MetricCNIMemory,
}

// metrics are the scenario's metrics, the lab's and the cluster's.
func metrics() map[string]result.MetricInfo {
	m := maps.Clone(filter.Metrics)
	maps.Copy(m, incluster.Metrics)
	return m
}

// Shape draws the scenario against the rule count, one line per mechanism
// (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape { return shape() }

// shape is the scenario's report shape, whatever its options; documents
// written before results carried it are drawn with it too (LegacyShape).
func shape() result.ScenarioShape {
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Sweep: &result.SweepShape{
			X: LabelRules, XText: "rules", Series: LabelMechanism, SeriesHeader: "Mechanism", Variant: LabelTraversal, Baseline: NoneMechanism,
			Intro: "Every metric against the number of deny rules (log scale), one line per mechanism (" + NoneMechanism +
				" = nothing loaded, dashed); median over repeats with its 95 % CI. Points that were too large, skipped or failed are named under the chart and in the tables.",
			PointMetrics: FilterMetrics,
			PointLead:    "Loading the filter: set-up until a denied probe is proven dropped, one update (add and remove one /32), tear-down and memory; on a cluster also the policy objects and bytes sent, cnibench's peak RSS while sending them, and the CNI pods' CPU and memory while they were created.",
		},
		MetricTitles: map[string]string{
			filter.SetupSeconds:           "Set-up until enforced",
			filter.UpdateAddSeconds:       "Update: add one CIDR",
			filter.UpdateRemoveSeconds:    "Update: remove one CIDR",
			filter.TeardownSeconds:        "Tear-down",
			filter.KernelBytes:            "Kernel memory of the rules",
			filter.LoaderRSSBytes:         "Loader peak RSS",
			incluster.MetricPolicyObjects: "Policy objects sent",
			incluster.MetricPolicyBytes:   "Policy bytes sent",
			filter.SuitePeakRSSBytes:      "cnibench's peak RSS while sending",
			incluster.MetricCNICPU:        "CNI pods' CPU while creating",
			incluster.MetricCNIMemory:     "CNI pods' memory after creating",
		},
	}
}
