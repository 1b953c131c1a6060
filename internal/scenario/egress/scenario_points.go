package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/incluster"
)

// ScenarioName is the egress-filter scenario's name (--scenario, the
// scenario label).
const ScenarioName = "egress-filter"

// Labels of the scenario's results (besides scenario.LabelScenario).
const (
	LabelMechanism = "mechanism"
	LabelRules     = "rules"
	LabelTraversal = "traversal"
)

// DefaultRules are the rule counts without --rules (issue 10).
var DefaultRules = []int{10, 100, 1000, 10000, 100000, 1000000}

// UpdateAddr is the second address the scenario gives the server pod
// (lab.Topology.AddServerAddress), besides filter.DeniedAddr: the address
// of the one-CIDR update. Generate never uses the last slot of
// 240.0.0.0/4, which holds it, so no generated set covers it.
var UpdateAddr = netip.MustParseAddr("255.255.255.254")

// ScenarioOptions configure the egress-filter scenario.
type ScenarioOptions struct {
	// Mechanisms to run; empty: every registered one.
	Mechanisms []string
	// Rules are the deny-set sizes; empty: DefaultRules.
	Rules []int
	// Traversals: TraversalEveryPacket and/or TraversalNewConnection;
	// empty: every-packet only. Mechanisms without kernel conntrack (none,
	// ebpf-*) are run every-packet only (a bypass changes nothing for them).
	Traversals []string
	// Seed generates the deny sets (recorded in the runs' config).
	Seed uint64
}

// Scenario is the egress-filter scenario (scenario.Scenario).
type Scenario struct {
	o    ScenarioOptions
	mech map[string]filter.Mechanism

	mu     sync.Mutex
	shared *sharedAddrs // the server's extra addresses, once per lab

	// backend is where the points run (SetBackend): the lab (its raw
	// mechanisms on the client's node) or kubernetes (the cluster's policy
	// layer, and raw mechanisms inside a client pod); cluster configures
	// the latter.
	backend   string
	defaulted bool // no --mechanisms: the backend's defaults
	cluster   incluster.Options
}

// NewScenario validates o and fills its defaults. Errors name the flag.
func NewScenario(o ScenarioOptions) (*Scenario, error) {
	defaulted := len(o.Mechanisms) == 0
	if defaulted {
		o.Mechanisms = filter.Mechanisms()
	}
	s, err := newScenario(o, lookupAny)
	if s != nil {
		s.defaulted = defaulted
	}
	return s, err
}

// newScenario is NewScenario with the mechanisms looked up by lookup.
func newScenario(o ScenarioOptions, lookup func(string) (filter.Mechanism, error)) (*Scenario, error) {
	if len(o.Rules) == 0 {
		o.Rules = slices.Clone(DefaultRules)
	}
	if len(o.Traversals) == 0 {
		o.Traversals = []string{filter.TraversalEveryPacket}
	}
	s := &Scenario{o: o, mech: map[string]filter.Mechanism{}}
	for _, name := range o.Mechanisms {
		m, err := lookup(name)
		if err != nil {
			return nil, fmt.Errorf("--mechanisms: %w", err)
		}
		if _, dup := s.mech[name]; dup {
			return nil, fmt.Errorf("--mechanisms: %q given twice", name)
		}
		s.mech[name] = m
	}
	for _, n := range o.Rules {
		if n < 1 {
			return nil, fmt.Errorf("--rules %d: must be at least 1", n)
		}
	}
	for _, tr := range o.Traversals {
		if !slices.Contains(filter.Traversals, tr) {
			return nil, fmt.Errorf("--filter-traversal %q: must be one of %s", tr, strings.Join(filter.Traversals, ", "))
		}
	}
	return s, nil
}

// Name is ScenarioName.
func (s *Scenario) Name() string { return ScenarioName }

// Options returns the options with their defaults filled in.
func (s *Scenario) Options() ScenarioOptions { return s.o }

// PointLabels are the labels of one point.
func PointLabels(mech string, rules int, traversal string) map[string]string {
	return map[string]string{
		scenario.LabelScenario: ScenarioName,
		LabelMechanism:         mech,
		LabelRules:             strconv.Itoa(rules),
		LabelTraversal:         traversal,
	}
}

// Points lists mechanism × rules × traversal in that order. A mechanism
// whose Probe fails has every point skipped with the reason; a rule count
// above its MaxRules is skipped as too large. A mechanism built with one
// traversal only (fixedTraversal) gets that point once, labelled with it.
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	for _, name := range s.o.Mechanisms {
		m := s.mech[name]
		probeErr, maxRules := s.pointLimits(name, m)
		for _, n := range s.o.Rules {
			for _, tr := range s.o.Traversals {
				if fixed := fixedTraversal(name); fixed != "" && tr != fixed {
					if slices.Contains(s.o.Traversals, fixed) {
						continue // the point of its own traversal is the same
					}
					tr = fixed
				}
				p := scenario.Point{Labels: PointLabels(name, n, tr)}
				switch {
				case probeErr != nil:
					p.Skip = probeErr
				case n > maxRules:
					p.Skip = fmt.Errorf("%w: %s holds at most %d rules, asked for %d", scenario.ErrTooLarge, name, maxRules, n)
					if lr, ok := m.(limitReasoner); ok && s.backend != backendKubernetes {
						p.Skip = fmt.Errorf("%w: %s", p.Skip, lr.LimitReason())
					}
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// fixedTraversal is the one traversal a mechanism is built with whatever
// --filter-traversal says, "" for those that take the flag: the baseline,
// BPF mechanisms (no kernel conntrack in front of their map) and a
// cluster's policy layer (the CNI's own datapath) are every-packet;
// calico-like is new-connection (its leading accept is Calico's).
func fixedTraversal(mech string) string {
	switch {
	case mech == filter.MechCalicoLike:
		return filter.TraversalNewConnection
	case mech == "none" || mech == filter.MechCiliumLike || strings.HasPrefix(mech, "ebpf") || incluster.IsPolicyMechanism(mech):
		return filter.TraversalEveryPacket
	}
	return ""
}

// limitReasoner is implemented by mechanisms whose MaxRules is a product's
// limit rather than a measured bound: the "too large" record says whose.
type limitReasoner interface {
	LimitReason() string
}

// pointParams reads a point's labels back.
func pointParams(p scenario.Point) (mech string, rules int, traversal string, err error) {
	mech, traversal = p.Labels[LabelMechanism], p.Labels[LabelTraversal]
	rules, err = strconv.Atoi(p.Labels[LabelRules])
	if err != nil || mech == "" || traversal == "" {
		return "", 0, "", errors.New("egress-filter: point without mechanism, rules and traversal labels")
	}
	return mech, rules, traversal, nil
}

// probeWarmup bounds a proof's wait for the state before its action (see
// Probe.Warmup): 2 s, or 20 µs per rule when that is longer. Behind a
// linear rule list every probe that matches no early rule walks all N:
// at 1M iptables-legacy rules a probe cost milliseconds, and the 1000 lost
// probes a release proof waits for before removing a CIDR took longer than
// 2 s (every such proof failed, and with it the point). The bound is only
// reached when something is wrong; a path that works gets there sooner.
func probeWarmup(rules int) time.Duration {
	return max(2*time.Second, time.Duration(rules)*20*time.Microsecond)
}

// probeInterval paces the probes to the denied address during a proof: one
// every 25 µs bounds the set-up time's resolution at 25 µs (the seed polled
// every 1 ms) while leaving the loader its CPU. Back to back, a few hundred
// thousand probes a second reach a receiver that shares the loader's CPU on
// a 2-core host: at 1M rules that made nftables' set-up 11.6–11.7 s against
// 7.6–7.9 s paced, ebpf-lpm's 2.5–2.8 s against 2.0–2.1 s (one run each,
// alternating, docs/findings.md section 7).
const probeInterval = 25 * time.Microsecond

// bytesPerRule bounds what one deny CIDR costs a mechanism, kernel memory
// and the loader's peak together, from the loads measured at 1M and 10M
// rules (docs/scenarios.md, docs/findings.md section 7), rounded up:
// ebpf-hash 92 B of preallocated map per slot, ebpf-lpm 29 B of trie,
// ipset 33 B of set plus the loader's garbage, nftables about 150 B of
// loader and the interval pairs in the kernel, iptables-legacy 376 MiB of
// iptables-restore at 1M plus the kernel's copy of the table, iptables-nft
// 1.3 KB of iptables-restore per rule at 100k.
var bytesPerRule = map[string]int64{
	"none": 0, "ebpf-hash": 110, "ebpf-lpm": 40, "ipset": 60,
	"nftables": 600, "iptables-legacy": 800, "iptables": 3000,
	filter.MechCalicoLike: 60, filter.MechIPSetDefault: 60, filter.MechCiliumLike: 40,
}

// generateBytesPerRule is the generated set in the suite (a netip.Prefix
// is 32 bytes) and its copies.
const generateBytesPerRule = 64

// memoryNeed estimates the memory a point needs (unknown mechanisms are
// counted like the costliest).
func memoryNeed(mech string, rules int) int64 {
	per, ok := bytesPerRule[mech]
	if !ok {
		per = 3000
	}
	return int64(rules) * (per + generateBytesPerRule)
}

// checkMemory refuses a point whose estimate exceeds half of the memory
// available (MemAvailable): a load that runs the machine out of memory
// must fail its point with a clear message, not the machine. Half leaves
// room for the estimate's error and everything else on the host.
func checkMemory(mech string, rules int, available int64) error {
	need := memoryNeed(mech, rules)
	if need <= available/2 {
		return nil
	}
	return fmt.Errorf("%s with %d rules needs about %s (kernel and loader, measured per rule), more than half of the %s available: not loaded (free memory or lower --rules)",
		mech, rules, gib(need), gib(available))
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
