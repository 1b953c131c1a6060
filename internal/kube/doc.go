// Package kube is cnibench's Kubernetes plumbing: loading a kubeconfig,
// creating the run's namespace, secret, pods, services and network
// policies, executing commands in pods, reading pod metrics, naming the
// cluster, and cleaning up afterwards; for the egress-filter scenario, deny
// sets as Cilium's and Calico's own cluster-wide objects through the
// dynamic client (crdpolicy.go). The scenarios' own objects (the egress
// deny sets as NetworkPolicies, the services scenario's service table) are
// built in their scenarios' packages on this one's calls (Call, CreateOwn,
// Once) and checks (objects.go). Beside it: kube/nodes chooses the client
// and server nodes; kube/cni identifies the CNI, its mode and kube-proxy's;
// kube/preflight dry-runs a run's objects through the cluster's admission;
// kube/rbac renders the rights all this needs; kube/agent is what runs
// inside the pods.
//
// Everything is written against kubernetes.Interface (dynamic.Interface
// for the CNIs' objects) so that it can be tested with the fake clients.
// Every object the package creates carries the labels ManagedByKey=ManagedBy
// and RunKey=<run ID> (the functions that take labels are given RunLabels,
// or ClusterObjectLabels for cluster-scoped objects), so that DeleteRun
// removes a run's objects and Clean removes the leftovers of crashed runs;
// a run ID must therefore be a valid label value, and, as it also goes into
// object names, lower-case letters, digits and '-' only. Every wait is a
// bounded poll.
//
// Functions log through the *slog.Logger attached to their context with
// WithLogger (nothing is logged without one).
package kube

import (
	"context"
	"log/slog"
	"time"
)

// Labels that cnibench puts on every object it creates.
const (
	// ManagedByKey is the standard label naming the tool that manages an
	// object.
	ManagedByKey = "app.kubernetes.io/managed-by"
	// ManagedBy is ManagedByKey's value on cnibench's objects.
	ManagedBy = "cnibench"
	// RunKey labels an object with the ID of the run that created it.
	RunKey = "cnibench.io/run"
	// RoleKey labels a pod with its role in the run ("server", "client",
	// "capture", …).
	RoleKey = "cnibench.io/role"
)

// pollInterval is how often the waits look at the cluster (tests shorten
// it).
var pollInterval = 500 * time.Millisecond

// RunLabels returns the labels every object of run runID carries
// (ManagedByKey and RunKey), for the functions that take labels
// (CiliumDenyPolicies, the scenarios' objects, …); callers may add their
// own.
func RunLabels(runID string) map[string]string { return runLabels(runID) }

// RunSelector is the label selector of run runID's objects (for
// DeleteClusterObjects, a scenario's deletes by label).
func RunSelector(runID string) string { return runSelector(runID) }

// runLabels returns the labels of every object of run runID.
func runLabels(runID string) map[string]string {
	return map[string]string{ManagedByKey: ManagedBy, RunKey: runID}
}

// runSelector is the label selector of run runID's objects.
func runSelector(runID string) string {
	return ManagedByKey + "=" + ManagedBy + "," + RunKey + "=" + runID
}

type loggerKey struct{}

// WithLogger returns a context whose functions of this package log to l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Logger returns the logger WithLogger attached to ctx, or one that
// discards (kube's sub-packages and callers beside its calls log there).
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
