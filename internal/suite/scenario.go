package suite

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// The suite knows no scenario by name: a scenario package registers
// itself (scenario.Register: its flags, builder, config and report shape)
// and the CLI links it into the binary.

// scenarioRun is the scenario a run runs (nil: the matrix).
type scenarioRun = scenario.Scenario

// cellsOf are the cells of a point: the scenario's own, or
// scenario.DefaultCells.
func cellsOf(sc scenario.Scenario, p scenario.Point) []scenario.Cell {
	return scenario.CellsOf(sc, p)
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

// validateScenario checks the scenario options by building the scenario;
// errors name the flag. (A scenario's flags given without it are refused
// where flags are parsed: scenario.Flags.Select.)
func (o Options) validateScenario() error {
	_, err := o.newScenario()
	return err
}

// newScenario builds the scenario of these options (nil, nil without
// --scenario).
func (o Options) newScenario() (scenario.Scenario, error) {
	if o.Scenario == "" {
		if o.NewScenario != nil {
			return nil, fmt.Errorf("a scenario's options without --scenario")
		}
		return nil, nil
	}
	build := o.NewScenario
	if build == nil {
		reg, err := scenario.Lookup(o.Scenario)
		if err != nil {
			return nil, unknownScenario(o.Scenario)
		}
		if build, err = reg.Parse(); err != nil {
			return nil, err
		}
	}
	c := scenario.Common{Profile: o.Profile, Seed: o.Seed, ClusterScale: o.ClusterScale}
	if o.Backend != nil {
		c.Backend, c.BackendConfig = o.Backend.Name(), o.Backend.Config()
	}
	sc, err := build(c)
	if err != nil {
		return nil, err
	}
	if sc == nil || sc.Name() != o.Scenario {
		return nil, fmt.Errorf("--scenario %s: its options build another scenario", o.Scenario)
	}
	return sc, nil
}

// unknownScenario is the error for a --scenario nobody registered.
func unknownScenario(name string) error {
	names := scenario.Names()
	if len(names) == 0 {
		return fmt.Errorf("--scenario %q: no scenario is linked into this binary", name)
	}
	return fmt.Errorf("--scenario %q: must be one of %s", name, strings.Join(names, ", "))
}

// withScenarioDefaults: a scenario runs at one MTU with the tests and
// flows of its cells (the backend picks its datapaths: the lab's routed
// one unless --datapaths says otherwise, without the baseline or the
// conntrack variants, since a scenario's baseline is part of its points).
func (o Options) withScenarioDefaults(sc scenario.Scenario) Options {
	o.MTUs = o.MTUs[:1]
	o.Tests, o.Flows = nil, nil
	cells := scenario.DefaultCells()
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

// scenarioConfig adds the scenario's name and its own config
// (scenario.Configer) to the results' config.
func scenarioConfig(m map[string]string, sc scenario.Scenario) {
	if sc == nil {
		return
	}
	m["scenario"] = sc.Name()
	if c, ok := sc.(scenario.Configer); ok {
		maps.Copy(m, c.Config())
	}
}

// scenarioShape is how reports draw the scenario (scenario.Shaper), for
// the results document; nil when the scenario says nothing (reports then
// draw it generically) or its shape is unusable (why says so).
func scenarioShape(sc scenario.Scenario) (shape *result.ScenarioShape, why string) {
	s, ok := sc.(scenario.Shaper)
	if !ok {
		return nil, ""
	}
	sh := s.Shape()
	if sh.Scenario == "" {
		sh.Scenario = sc.Name()
	}
	if bad := sh.Valid(); bad != "" {
		return nil, fmt.Sprintf("scenario %s: its report shape is left out (%s)", sc.Name(), bad)
	}
	if sh.Scenario != sc.Name() {
		return nil, fmt.Sprintf("scenario %s: its report shape is left out (it names scenario %q)", sc.Name(), sh.Scenario)
	}
	return &sh, ""
}
