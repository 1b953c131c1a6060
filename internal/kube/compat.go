package kube

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube/preflight"
)

// Object, Refused and Preflight are the names internal/scenario/cluster.go
// still uses for what moved to internal/kube/preflight; remove this file
// once it names preflight itself.

// Object is preflight.Object.
//
// Deprecated: use preflight.Object.
type Object = preflight.Object

// Refused is preflight.Refused.
//
// Deprecated: use preflight.Refused.
const Refused = preflight.Refused

// Preflight is preflight.Check.
//
// Deprecated: use preflight.Check.
func Preflight(ctx context.Context, cs kubernetes.Interface, objs []Object, opts ...preflight.Option) preflight.Report {
	return preflight.Check(ctx, cs, objs, opts...)
}
