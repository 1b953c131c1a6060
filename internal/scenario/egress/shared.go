package egress

import (
	"context"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/lab"
)

// clusterDeployment is what the scenario needs of a Kubernetes deployment
// (the cluster backend's have it): the run's pods and API clients.
type clusterDeployment interface {
	ClusterAccess(datapath string) (*cluster.Access, error)
}

var _ clusterDeployment = (*cluster.Deployment)(nil)

// sharedAddrs are the server's two extra addresses in one lab (added at the
// first Prepare, removed by Close).
type sharedAddrs struct {
	topo   *lab.Topology
	remove []func(context.Context) error
}
