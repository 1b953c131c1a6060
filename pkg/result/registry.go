package result

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
)

// What others define: Metrics documents the engine's own metrics; a
// scenario (its set-up costs, its proof's counters) registers its own from
// its package's init, through its scenario registration, and so does any
// other owner of metrics. Info, Known and Definitions read the engine's
// first, then the registered ones. Likewise a scenario older than
// Set.Shape registers the shape its documents written before then are
// drawn with (RegisterLegacyShape).
//
// A program knows a scenario's metrics and shape when it links the
// scenario's package: cnibench links every scenario (internal/cli/suite's
// scenarios.go); a reader that does not sees such a metric as any unknown
// one (Info guesses its unit and direction from its name).

// A Definition is one defined metric and who defined it.
type Definition struct {
	Name string
	// Owner is who registered it ("" for the engine's own, Metrics), e.g.
	// a scenario's name.
	Owner string
	MetricInfo
}

type ownedInfo struct {
	owner string
	info  MetricInfo
}

var registered = struct {
	mu      sync.RWMutex
	metrics map[string]ownedInfo
	shapes  map[string]ScenarioShape
}{metrics: map[string]ownedInfo{}, shapes: map[string]ScenarioShape{}}

// RegisterMetrics adds the metrics owner reports beyond the engine's,
// documented as Metrics documents the engine's (docs/results.md mirrors
// them all). It is called from the owner's package init (a scenario's
// through scenario.Register) and panics, as registering a scenario twice
// does, on an empty owner or name, on a definition without a unit or help,
// and on a name already defined by the engine, by another owner or by
// owner itself.
func RegisterMetrics(owner string, defs map[string]MetricInfo) {
	if owner == "" {
		panic("result.RegisterMetrics: no owner")
	}
	registered.mu.Lock()
	defer registered.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		m := defs[name]
		switch {
		case name == "":
			panic(fmt.Sprintf("result.RegisterMetrics(%q): a metric without a name", owner))
		case m.Unit == "" || m.Help == "":
			panic(fmt.Sprintf("result.RegisterMetrics(%q): metric %s has no unit or help", owner, name))
		}
		if _, ok := Metrics[name]; ok {
			panic(fmt.Sprintf("result.RegisterMetrics(%q): metric %s is the engine's", owner, name))
		}
		if o, ok := registered.metrics[name]; ok {
			panic(fmt.Sprintf("result.RegisterMetrics(%q): metric %s is already %s's", owner, name, o.owner))
		}
	}
	for name, m := range defs {
		registered.metrics[name] = ownedInfo{owner, m}
	}
}

// Known returns a defined metric's documentation: the engine's (Metrics)
// or a registered one (RegisterMetrics). Unlike Info it makes nothing up.
func Known(name string) (MetricInfo, bool) {
	if m, ok := Metrics[name]; ok {
		return m, true
	}
	registered.mu.RLock()
	defer registered.mu.RUnlock()
	m, ok := registered.metrics[name]
	return m.info, ok
}

// Definitions lists every defined metric, the engine's and the registered
// ones, sorted by name.
func Definitions() []Definition {
	out := make([]Definition, 0, len(Metrics))
	for name, m := range Metrics {
		out = append(out, Definition{Name: name, MetricInfo: m})
	}
	registered.mu.RLock()
	for name, m := range registered.metrics {
		out = append(out, Definition{Name: name, Owner: m.owner, MetricInfo: m.info})
	}
	registered.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RegisterLegacyShape records how reports draw a scenario's runs in
// documents that carry no shape of their own, those written before
// Set.Shape existed: only scenarios older than it register one (called
// from their registration). It is the shape such documents need, which
// may differ from what the scenario writes today. It panics on an invalid
// shape or a scenario registered twice.
func RegisterLegacyShape(sh ScenarioShape) {
	if why := sh.Valid(); why != "" {
		panic(fmt.Sprintf("result.RegisterLegacyShape(%q): %s", sh.Scenario, why))
	}
	registered.mu.Lock()
	defer registered.mu.Unlock()
	if _, dup := registered.shapes[sh.Scenario]; dup {
		panic(fmt.Sprintf("result.RegisterLegacyShape: scenario %q registered twice", sh.Scenario))
	}
	registered.shapes[sh.Scenario] = sh.clone()
}

// LegacyShape returns the shape registered for scenario's documents
// written without one (RegisterLegacyShape), a copy of its own.
func LegacyShape(scenario string) (ScenarioShape, bool) {
	registered.mu.RLock()
	defer registered.mu.RUnlock()
	sh, ok := registered.shapes[scenario]
	if !ok {
		return ScenarioShape{}, false
	}
	return sh.clone(), true
}

// clone copies the shape deeply: what a registry hands out cannot change
// what it holds.
func (s ScenarioShape) clone() ScenarioShape {
	if s.Sweep != nil {
		sw := *s.Sweep
		sw.PointMetrics = slices.Clone(sw.PointMetrics)
		s.Sweep = &sw
	}
	if s.Categorical != nil {
		c := *s.Categorical
		c.Groups, c.GroupHeaders = slices.Clone(c.Groups), slices.Clone(c.GroupHeaders)
		if c.Metrics != nil {
			m := make(map[string][]string, len(c.Metrics))
			for k, v := range c.Metrics {
				m[k] = slices.Clone(v)
			}
			c.Metrics = m
		}
		s.Categorical = &c
	}
	s.MetricTitles = maps.Clone(s.MetricTitles)
	return s
}
