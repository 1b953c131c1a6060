package scenario

import (
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/backend"
)

// ErrNeedsCluster is wrapped by the error of a point that only a
// Kubernetes cluster can prepare (it creates API objects): on the lab it is
// recorded "skipped: <reason>".
var ErrNeedsCluster = fmt.Errorf("needs the kubernetes backend: %w", backend.ErrNotSupported)

// ErrNotServed is wrapped by the error of a point whose API resources the
// cluster does not serve (a CNI's own policy objects on a cluster without
// that CNI): recorded "skipped: <reason>".
var ErrNotServed = fmt.Errorf("not served by this cluster: %w", backend.ErrNotSupported)

// ErrNotEnforced is wrapped by the error of a point whose filter or policy
// the backend accepted but did not enforce (a CNI that ignores
// NetworkPolicy): the point is recorded "not enforced: <evidence>", and no
// traffic figure is attributed to a filter that is not there.
var ErrNotEnforced = errors.New("not enforced")
