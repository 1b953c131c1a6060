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
	"github.com/cnibench/cnibench/internal/scenario/encrypt"
	"github.com/cnibench/cnibench/internal/scenario/l4lb"
	"github.com/cnibench/cnibench/internal/scenario/services"
	"github.com/cnibench/cnibench/pkg/result"
)

// Scenarios the suite runs with --scenario.
const (
	ScenarioEgress   = egress.ScenarioName
	ScenarioServices = services.ScenarioName
	ScenarioL4LB     = l4lb.ScenarioName
	ScenarioEncrypt  = encrypt.ScenarioName
)

// Scenarios lists the accepted --scenario values.
var Scenarios = []string{ScenarioEgress, ScenarioServices, ScenarioL4LB, ScenarioEncrypt}

// scenarioRun is the scenario a run runs (nil: the matrix).
type scenarioRun = scenario.Scenario

// FixedRate is the offered load of the scenario's fixed-rate udp_stream
// cell (the seed's 1 Gbit/s, for CPU at a fixed load).
const FixedRate = "1G"

// LabelRate marks the fixed-rate udp_stream cell (absent on the others).
const LabelRate = "rate"

// defaultCells are the cells of every point of a scenario that does not
// choose its own (egress-filter, issue 10): udp_stream at the maximum rate
// (goodput, packet rate), udp_stream at 1 Gbit/s (CPU at a fixed load),
// tcp_stream, tcp_rr and icmp_echo (latency), at one flow on the
// cross-node path.
var defaultCells = []scenario.Cell{
	{Test: engine.UDPStream, Flows: 1}, {Test: engine.UDPStream, Flows: 1, Rate: FixedRate, Labels: map[string]string{LabelRate: FixedRate}},
	{Test: engine.TCPStream, Flows: 1}, {Test: engine.TCPRR, Flows: 1}, {Test: engine.ICMPEcho, Flows: 1},
}

// cellsOf are the cells of a point: the scenario's own, or defaultCells.
func cellsOf(sc scenario.Scenario, p scenario.Point) []scenario.Cell {
	if c, ok := sc.(scenario.Celler); ok {
		return c.Cells(p)
	}
	return defaultCells
}

// scenarioCell is a scenario's part of a cell: the point's labels (plus
// the cell's), the client's --rate, and what the point adds to the cell's
// repeats (its Prepared's metrics and config, set once prepared), and the
// prepared point itself (its client target and proof, when it has them).
type scenarioCell struct {
	labels  map[string]string
	rate    string
	cell    scenario.Cell
	metrics map[string]float64
	config  map[string]string
	prep    scenario.Prepared
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
	egressFlags := len(o.Mechanisms) > 0 || len(o.Rules) > 0 || len(o.FilterTraversals) > 0
	servicesFlags := len(o.Implementations) > 0 || len(o.Services) > 0
	l4lbFlags := len(o.LBModes) > 0
	switch {
	case o.Scenario != "" && o.Scenario != ScenarioEncrypt && len(o.Encrypt) > 0:
		return fmt.Errorf("--encrypt runs the %s scenario, not %s: drop one of --encrypt and --scenario", ScenarioEncrypt, o.Scenario)
	case o.Scenario == "" && l4lbFlags:
		return fmt.Errorf("--lb-modes needs --scenario %s", ScenarioL4LB)
	case o.Scenario != "" && o.Scenario != ScenarioL4LB && l4lbFlags:
		return fmt.Errorf("--lb-modes is an option of --scenario %s, not %s", ScenarioL4LB, o.Scenario)
	case o.Scenario == "" && egressFlags:
		return fmt.Errorf("--mechanisms, --rules and --filter-traversal need --scenario %s", ScenarioEgress)
	case o.Scenario == "" && servicesFlags:
		return fmt.Errorf("--implementations and --services need --scenario %s", ScenarioServices)
	case o.Scenario == "":
		return nil
	case !slices.Contains(Scenarios, o.Scenario):
		return fmt.Errorf("--scenario %q: must be one of %s", o.Scenario, strings.Join(Scenarios, ", "))
	case o.Scenario != ScenarioEgress && egressFlags:
		return fmt.Errorf("--mechanisms, --rules and --filter-traversal are options of --scenario %s, not %s", ScenarioEgress, o.Scenario)
	case o.Scenario != ScenarioServices && servicesFlags:
		return fmt.Errorf("--implementations and --services are options of --scenario %s, not %s", ScenarioServices, o.Scenario)
	}
	_, err := o.newScenario()
	return err
}

// newScenario builds the scenario of these options (nil, nil without
// --scenario).
func (o Options) newScenario() (scenario.Scenario, error) {
	switch o.Scenario {
	case "":
		return nil, nil
	case ScenarioEgress:
		return o.egressScenario()
	case ScenarioServices:
		return services.New(services.Options{Implementations: o.Implementations, Services: o.Services})
	case ScenarioL4LB:
		return l4lb.New(l4lb.Options{Modes: o.LBModes})
	case ScenarioEncrypt:
		return encrypt.New(encrypt.Options{Families: o.Encrypt})
	}
	return nil, fmt.Errorf("--scenario %q: must be one of %s", o.Scenario, strings.Join(Scenarios, ", "))
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

// withScenarioDefaults: a scenario runs at one MTU with the tests and
// flows of its cells (the backend picks its datapaths: the lab's routed
// one unless --datapaths says otherwise, without the baseline or the
// conntrack variants, since a scenario's baseline is part of its points).
func (o Options) withScenarioDefaults(sc scenario.Scenario) Options {
	o.MTUs = o.MTUs[:1]
	o.Tests, o.Flows = nil, nil
	cells := defaultCells
	if pts := sc.Points(); len(pts) > 0 {
		cells = cellsOf(sc, pts[0])
	}
	for _, c := range cells {
		if !slices.Contains(o.Tests, c.Test) {
			o.Tests = append(o.Tests, c.Test)
		}
		if c.Test != engine.HTTP && !slices.Contains(o.Flows, max(c.Flows, 1)) {
			o.Flows = append(o.Flows, max(c.Flows, 1))
		}
		if c.Test == engine.HTTP {
			o.HTTPClients = c.Flows
		}
	}
	return o
}

// scenarioConfig adds the scenario's options to the results' config.
func (o Options) scenarioConfig(m map[string]string) {
	if o.Scenario == "" {
		return
	}
	m["scenario"] = o.Scenario
	switch o.Scenario {
	case ScenarioEncrypt:
		if s, err := encrypt.New(encrypt.Options{Families: o.Encrypt}); err == nil {
			maps.Copy(m, s.Config())
		}
	case ScenarioL4LB:
		if s, err := l4lb.New(l4lb.Options{Modes: o.LBModes}); err == nil {
			maps.Copy(m, s.Config())
		}
	case ScenarioServices:
		if s, err := services.New(services.Options{Implementations: o.Implementations, Services: o.Services}); err == nil {
			maps.Copy(m, s.Config())
		}
	case ScenarioEgress:
		s, err := o.egressScenario()
		if err != nil {
			return
		}
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
