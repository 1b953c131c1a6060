package scenario

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
)

// ErrNeedsCluster is wrapped by the error of a point that only a
// Kubernetes cluster can prepare (it creates API objects): on the lab it is
// recorded "skipped: <reason>".
var ErrNeedsCluster = fmt.Errorf("needs the kubernetes backend: %w", backend.ErrNotSupported)

// ErrNotServed is wrapped by the error of a point whose API resources the
// cluster does not serve (a CNI's own policy objects on a cluster without
// that CNI): recorded "skipped: <reason>".
var ErrNotServed = fmt.Errorf("not served by this cluster: %w", backend.ErrNotSupported)

// ErrRefused is wrapped by the error of a point whose API objects the
// cluster refuses (its admission webhooks or policies, Pod Security,
// RBAC, a quota), found by a dry run before anything was created or
// measured (Admit): recorded "skipped: <reason>; <fix>".
// It wraps backend.ErrNotSupported without saying so in its text.
var ErrRefused error = refusedError{}

type refusedError struct{}

func (refusedError) Error() string { return "refused by this cluster" }
func (refusedError) Unwrap() error { return backend.ErrNotSupported }

// ErrNotEnforced is wrapped by the error of a point whose filter or policy
// the backend accepted but did not enforce (a CNI that ignores
// NetworkPolicy): the point is recorded "not enforced: <evidence>", and no
// traffic figure is attributed to a filter that is not there.
var ErrNotEnforced = errors.New("not enforced")

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

// Admit dry-runs the objects a point is about to create (kube.Preflight:
// every admission plugin and webhook runs, nothing is persisted) and
// returns an error wrapping ErrRefused for the first one refused, with the
// refusal's reason and fix on one line; nil when all are admitted or could
// not be checked (the create itself then reports what it meets). A point
// calls it before its first create, so that a cluster whose admission
// refuses a scenario's objects skips the point at once, with the reason,
// instead of failing it half-way with the objects' remains to remove.
func Admit(ctx context.Context, cs kubernetes.Interface, objs []kube.Object) error {
	if cs == nil || len(objs) == 0 {
		return nil
	}
	rep := kube.Preflight(ctx, cs, objs)
	for _, r := range rep.Objects {
		if r.Verdict != kube.Refused {
			continue
		}
		msg := r.Reason
		if msg == "" {
			msg = r.Detail
		}
		if r.Why != "" {
			msg = r.Why + ": " + msg
		}
		if r.Fix != "" {
			msg += "; fix: " + r.Fix
		}
		return fmt.Errorf("%w: %s %s: %s", ErrRefused, r.Kind, r.Name, msg)
	}
	return nil
}
