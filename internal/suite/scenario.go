package suite

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress"
	"github.com/cnibench/cnibench/pkg/result"
)

// Scenarios the suite runs with --scenario.
const ScenarioEgress = egress.ScenarioName

// Scenarios lists the accepted --scenario values.
var Scenarios = []string{ScenarioEgress}

// ScenarioDatapath is the datapath a scenario runs on without --datapaths.
const ScenarioDatapath = "veth-routing"

// FixedRate is the offered load of the scenario's fixed-rate udp_stream
// cell (the seed's 1 Gbit/s, for CPU at a fixed load).
const FixedRate = "1G"

// LabelRate marks the fixed-rate udp_stream cell (absent on the others).
const LabelRate = "rate"

// scenarioTest is one cell of every scenario point: a test at one flow on
// the cross-node path, at full speed or at a fixed rate.
type scenarioTest struct {
	Test string
	Rate string
}

// scenarioTests are the cells of every point (issue 10): udp_stream at the
// maximum rate (goodput, packet rate), udp_stream at 1 Gbit/s (CPU at a
// fixed load), tcp_stream, tcp_rr and icmp_echo (latency).
var scenarioTests = []scenarioTest{
	{engine.UDPStream, ""}, {engine.UDPStream, FixedRate}, {engine.TCPStream, ""},
	{engine.TCPRR, ""}, {engine.ICMPEcho, ""},
}

// scenarioCell is a scenario's part of a cell: the point's labels (plus
// LabelRate), the client's --rate, and what the point adds to the cell's
// repeats (its Prepared's metrics and config, set once prepared).
type scenarioCell struct {
	labels  map[string]string
	rate    string
	metrics map[string]float64
	config  map[string]string
}

// apply adds the point's metrics and config to a measured result, and the
// packet rate to udp_stream. It does nothing outside scenarios.
func (sc *scenarioCell) apply(c cell, res *result.Result) {
	if sc == nil {
		return
	}
	if res.Config == nil {
		res.Config = map[string]string{}
	}
	maps.Copy(res.Config, sc.config)
	for i := range res.Repeats {
		m := res.Repeats[i].Metrics
		if m == nil {
			continue
		}
		maps.Copy(m, sc.metrics)
		if d := res.Repeats[i].DurationSec; c.Test == engine.UDPStream && d > 0 {
			if n, ok := m[result.DatagramsReceived]; ok {
				m[result.DatagramsReceivedPerSec] = n / d
			}
		}
	}
}

// scenarioCells are the cells of one point on a datapath's cross-node path.
func scenarioCells(p scenario.Point, datapath string, mtu int) []cell {
	var out []cell
	for _, t := range scenarioTests {
		extra := maps.Clone(p.Labels)
		if t.Rate != "" {
			extra[LabelRate] = t.Rate
		}
		out = append(out, cell{Datapath: datapath, Path: "cross-node", Test: t.Test, Flows: 1, MTU: mtu,
			timeWait: -1, sc: &scenarioCell{labels: extra, rate: t.Rate}})
	}
	return out
}

func (c cell) scenarioString() string {
	keys := slices.Sorted(maps.Keys(c.sc.labels))
	var parts []string
	for _, k := range keys {
		if k != scenario.LabelScenario {
			parts = append(parts, k+"="+c.sc.labels[k])
		}
	}
	return fmt.Sprintf("%s %s %s (%s)", c.Datapath, c.Path, c.Test, strings.Join(parts, " "))
}

// validateScenario checks the scenario options; errors name the flag.
func (o Options) validateScenario() error {
	if o.Scenario == "" {
		if len(o.Mechanisms) > 0 || len(o.Rules) > 0 || len(o.FilterTraversals) > 0 {
			return fmt.Errorf("--mechanisms, --rules and --filter-traversal need --scenario %s", ScenarioEgress)
		}
		return nil
	}
	if !slices.Contains(Scenarios, o.Scenario) {
		return fmt.Errorf("--scenario %q: must be one of %s", o.Scenario, strings.Join(Scenarios, ", "))
	}
	_, err := o.egressScenario()
	return err
}

// egressScenario builds the egress-filter scenario of these options.
func (o Options) egressScenario() (*egress.Scenario, error) {
	seed := o.FilterSeed
	if seed == 0 {
		seed = o.Seed
	}
	return egress.NewScenario(egress.ScenarioOptions{
		Mechanisms: o.Mechanisms, Rules: o.Rules, Traversals: o.FilterTraversals, Seed: seed,
	})
}

// withScenarioDefaults: a scenario runs on veth-routing unless --datapaths
// says otherwise, without the baseline datapath or the conntrack variants
// (its baseline is the mechanism none).
func (o Options) withScenarioDefaults() Options {
	if len(o.Datapaths) == 0 {
		o.Datapaths = []string{ScenarioDatapath}
	}
	o.NoBaseline = true
	o.Conntrack = false
	o.MTUs = o.MTUs[:1]
	o.Tests = nil
	for _, t := range scenarioTests {
		if !slices.Contains(o.Tests, t.Test) {
			o.Tests = append(o.Tests, t.Test)
		}
	}
	o.Flows = []int{1}
	return o
}

// scenarioConfig adds the scenario's options to the results' config.
func (o Options) scenarioConfig(m map[string]string) {
	if o.Scenario == "" {
		return
	}
	m["scenario"] = o.Scenario
	if s, err := o.egressScenario(); err == nil {
		so := s.Options()
		m["mechanisms"] = strings.Join(so.Mechanisms, ",")
		rules := make([]string, len(so.Rules))
		for i, n := range so.Rules {
			rules[i] = strconv.Itoa(n)
		}
		m["rules"] = strings.Join(rules, ",")
		m["filter_traversal"] = strings.Join(so.Traversals, ",")
		m["filter_seed"] = strconv.FormatUint(so.Seed, 10)
		m["scenario_cells"] = "per point: udp_stream (max rate), udp_stream --rate " + FixedRate + " (label rate), tcp_stream, tcp_rr, icmp_echo; cross-node, 1 flow"
	}
}
