//go:build !linux

package egress

import (
	"context"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// Prepare implements scenario.Scenario; the lab's filters are Linux only.
// A cluster's points run anywhere (they only talk to the cluster).
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	name, n, traversal, err := pointParams(p)
	if err != nil {
		return nil, err
	}
	if ca, err := scenario.Access(env, scenario.ErrNeedsCluster, clusterDeployment.ClusterAccess); err == nil {
		return s.prepareCluster(ctx, ca, name, n, traversal)
	}
	return nil, lab.ErrNotSupportedOnOS
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error { return nil }
