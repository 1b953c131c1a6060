//go:build !linux

package services

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ErrNotSupported is wrapped by the skip reason of an implementation this
// machine cannot run.
var ErrNotSupported = internal.ErrNotSupported

type state struct {
	mu      sync.Mutex
	started map[*lab.Topology][]func()
}

func probe(string) error { return lab.ErrNotSupportedOnOS }

// Prepare implements scenario.Scenario; the lab is Linux only.
// A cluster's points run anywhere (they only talk to the cluster).
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	if p.Labels[LabelImplementation] == ImplCluster {
		n, err := strconv.Atoi(p.Labels[LabelServices])
		if err != nil {
			return nil, fmt.Errorf("services label %q: %w", p.Labels[LabelServices], err)
		}
		ca, err := scenario.Access(env, scenario.ErrNeedsCluster, clusterDeployment.ClusterAccess)
		if err != nil {
			return nil, fmt.Errorf("services: %w", err)
		}
		return PrepareCluster(ctx, env, ca, n, s.cluster)
	}
	return nil, lab.ErrNotSupportedOnOS
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error { return nil }
