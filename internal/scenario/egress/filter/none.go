package filter

import (
	"context"
	"net/netip"
)

// noneMaxRules: none holds nothing, so its bound is only the generator's
// and the scenario's (10M, the largest N issue 10 asks for).
const noneMaxRules = 10_000_000

func init() { Register("none", func() Mechanism { return noneMechanism{} }) }

// noneMechanism is the baseline: it loads nothing and drops nothing, so the
// same measurements without a filter show what the filters cost.
type noneMechanism struct{}

func (noneMechanism) Name() string  { return "none" }
func (noneMechanism) Probe() error  { return nil }
func (noneMechanism) MaxRules() int { return noneMaxRules }

func (noneMechanism) Load(_ context.Context, _ Target, _ []netip.Prefix, _ Options) (Filter, LoadInfo, error) {
	return noneFilter{}, LoadInfo{Traversal: TraversalEveryPacket, Method: "none (nothing loaded)"}, nil
}

type noneFilter struct{}

func (noneFilter) Add(context.Context, netip.Prefix) error    { return nil }
func (noneFilter) Remove(context.Context, netip.Prefix) error { return nil }
func (noneFilter) Stats(context.Context) (Stats, error)       { return Stats{}, nil }
func (noneFilter) Detach(context.Context) error               { return nil }
func (noneFilter) Attach(context.Context) error               { return nil }
func (noneFilter) Close(context.Context) error                { return nil }
