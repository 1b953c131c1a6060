package scenario

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cluster"
)

// ErrNeedsCluster is wrapped by the error of a point that only a
// Kubernetes cluster can prepare (it creates API objects): on the lab it is
// recorded "skipped: <reason>".
var ErrNeedsCluster = fmt.Errorf("needs the kubernetes backend: %w", backend.ErrNotSupported)

// ClusterDeployment is a Kubernetes deployment's capability, implemented
// by the cluster backend's deployments.
type ClusterDeployment interface {
	ClusterAccess(datapath string) (*cluster.Access, error)
}

// Cluster returns what a Kubernetes cluster gives a scenario, or an error
// wrapping ErrNeedsCluster on another backend.
func (e Env) Cluster() (*cluster.Access, error) {
	cd, ok := e.Deployment.(ClusterDeployment)
	if !ok {
		return nil, ErrNeedsCluster
	}
	return cd.ClusterAccess(e.Datapath)
}
var _ ClusterDeployment = (*cluster.Deployment)(nil)
