package egress

import (
	"context"
	"fmt"
	"slices"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/incluster"
)

// backendKubernetes is the cluster backend's name (cluster.Name).
const backendKubernetes = cluster.Name

// lookupAny resolves a mechanism name: a raw one (a Mechanism), or one of
// the cluster's policy layer (no Mechanism: the cluster runs it).
func lookupAny(name string) (filter.Mechanism, error) {
	if incluster.IsPolicyMechanism(name) {
		return nil, nil
	}
	m, err := filter.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("unknown egress mechanism %q (known: %v and, on a cluster, %v)", name, filter.Mechanisms(), incluster.PolicyMechanisms)
	}
	return m, nil
}

// SetBackend says where the points run, before Points: on a cluster
// without --mechanisms, the baseline, the cluster's policy layer and the
// raw mechanisms inside a client pod; on the lab its raw mechanisms. co
// configures the cluster's points.
func (s *Scenario) SetBackend(name string, co incluster.Options) {
	s.backend, s.cluster = name, co.WithDefaults()
	if name == backendKubernetes && s.defaulted {
		s.o.Mechanisms = append([]string{"none"}, incluster.PolicyMechanisms...)
		for _, m := range filter.Mechanisms() {
			if m != "none" {
				s.o.Mechanisms = append(s.o.Mechanisms, m)
			}
		}
		for _, m := range s.o.Mechanisms {
			if _, ok := s.mech[m]; !ok {
				s.mech[m], _ = lookupAny(m)
			}
		}
	}
	if name != backendKubernetes && s.defaulted {
		s.o.Mechanisms = slices.DeleteFunc(s.o.Mechanisms, incluster.IsPolicyMechanism)
	}
}

// pointLimits are a mechanism's probe error and rule bound on this
// backend: the lab probes this machine; on a cluster a raw mechanism is
// probed inside its pod (at Prepare) and every point is bounded by the
// cluster's limit.
func (s *Scenario) pointLimits(name string, m filter.Mechanism) (error, int) {
	if s.backend == backendKubernetes {
		return nil, s.cluster.MaxRules
	}
	if m == nil {
		return fmt.Errorf("%s is a cluster's policy layer: %w", name, scenario.ErrNeedsCluster), 0
	}
	return m.Probe(), m.MaxRules()
}

// prepareCluster prepares a point on a cluster.
func (s *Scenario) prepareCluster(ctx context.Context, ca *cluster.Access, name string, n int, traversal string) (scenario.Prepared, error) {
	switch {
	case name == "none":
		return incluster.PrepareNone(ca, s.cluster), nil
	case incluster.IsPolicyMechanism(name):
		if traversal != filter.TraversalEveryPacket {
			return nil, fmt.Errorf("%w: %s builds the CNI's own datapath; --filter-traversal applies to the raw mechanisms", scenario.ErrNotServed, name)
		}
		return incluster.PreparePolicy(ctx, ca, name, n, s.o.Seed, s.cluster)
	}
	return incluster.PrepareRaw(ctx, ca, name, n, s.o.Seed, traversal, s.cluster)
}

// Escalates makes a cluster's points one series per mechanism and
// traversal, run in ascending rule count, stopped at its first failure
// (scenario.Escalation): a CNI whose agent or API server fails at N would
// fail the same way at 10 N, and could take the cluster with it. On the
// lab every point runs: its failures (a memory guard, a kernel refusal)
// are each point's own, bounded by MaxRules and the memory check, and
// harm nothing beyond the lab.
func (s *Scenario) Escalates(p scenario.Point) (series string, size int, ok bool) {
	if s.backend != backendKubernetes {
		return "", 0, false
	}
	mech, n, tr, err := pointParams(p)
	if err != nil {
		return "", 0, false
	}
	return mech + " (" + tr + ")", n, true
}
