package incluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/preflight"
	"github.com/cnibench/cnibench/internal/scenario"
)

// removeTimeout bounds the wait for a point's cluster-scoped objects to go
// after their deletion (each API call is bounded and retried besides).
const removeTimeout = 2 * time.Minute

// policyObjects is a mechanism's objects for a deny set: how to create
// them (each built just before it is sent: NetworkPolicies from a
// PolicySet, Cilium's and Calico's from a kube.DenyObjects) and remove
// them, what they are, and the dry-run candidates.
type policyObjects struct {
	// create sends the objects in order and returns how many were created
	// and the bytes of JSON sent for them, also on error.
	create func(context.Context) (objects, bytes int, err error)
	// remove deletes whatever of them exists (by name or by the run's
	// labels), whatever create got to; each call bounded and retried.
	remove   func(context.Context) error
	describe string
	count    int
	dryRun   []preflight.Object
}

// buildPolicyObjects builds a mechanism's objects for the deny set.
func buildPolicyObjects(ctx context.Context, ca *cluster.Access, mech, name string, cidrs []netip.Prefix, chunk int) (*policyObjects, error) {
	switch mech {
	case MechNetworkPolicy:
		set, err := DenyEgressPolicySet(name, ca.Namespace, metav1.LabelSelector{MatchLabels: ca.ClientLabels}, cidrs, chunk, maps.Clone(ca.Labels))
		if err != nil {
			return nil, err
		}
		po := &policyObjects{count: set.Len(),
			describe: fmt.Sprintf("%d NetworkPolicy object(s): egress allowed to 0.0.0.0/0 and ::/0 except the deny set, split into disjoint ipBlocks of at most %d excepts per object", set.Len(), chunk)}
		po.create = func(ctx context.Context) (int, int, error) {
			n, b := 0, 0
			for i := range set.Len() {
				p := set.Policy(i)
				if err := kube.ApplyPolicy(ctx, ca.Clientset, p); err != nil {
					return n, b, fmt.Errorf("%w%s", err, kube.CreateHint(err))
				}
				n, b = n+1, b+kube.ObjectBytes(p)
			}
			return n, b, nil
		}
		po.remove = func(ctx context.Context) error {
			var errs []error
			for i := range set.Len() {
				errs = append(errs, kube.DeletePolicy(ctx, ca.Clientset, ca.Namespace, fmt.Sprintf("%s-%d", name, i)))
			}
			return errors.Join(errs...)
		}
		if set.Len() > 0 {
			po.dryRun = []preflight.Object{{Obj: set.Policy(0), Why: "the egress-filter scenario's " + mech + " objects"}}
		}
		return po, nil
	case MechCiliumPolicy, MechCalicoNetworkSet:
		if ca.Dynamic == nil {
			return nil, fmt.Errorf("%w: no dynamic client for the cluster's policy resources", scenario.ErrNeedsCluster)
		}
		gvrs := []schema.GroupVersionResource{kube.CiliumClusterwidePolicies}
		if mech == MechCalicoNetworkSet {
			gvrs = []schema.GroupVersionResource{kube.CalicoGlobalNetworkSets, kube.CalicoGlobalNetworkPolicies}
		}
		if err := kube.Served(ctx, ca.Discovery, gvrs...); err != nil {
			if kube.IsNotServed(err) {
				return nil, fmt.Errorf("%w: %s: %v", scenario.ErrNotServed, mech, err)
			}
			return nil, err
		}
		labels := maps.Clone(ca.ClusterLabels)
		var set *kube.DenyObjects
		var err error
		if mech == MechCiliumPolicy {
			set, err = kube.CiliumDenySet(name, ca.ClientLabels, cidrs, chunk, labels)
		} else {
			set, err = kube.CalicoDenySet(name, ca.ClientLabels, cidrs, chunk, labels)
		}
		if err != nil {
			return nil, err
		}
		return &policyObjects{
			create: func(ctx context.Context) (int, int, error) { return kube.CreateDenyObjects(ctx, ca.Dynamic, set) },
			remove: func(ctx context.Context) error {
				var errs []error
				for _, g := range gvrs {
					_, err := kube.DeleteClusterObjects(ctx, ca.Dynamic, g, kube.RunSelector(ca.RunID), removeTimeout)
					errs = append(errs, err)
				}
				return errors.Join(errs...)
			},
			describe: fmt.Sprintf("%d %s object(s), at most %d CIDRs each", set.Len(), mech, chunk),
			count:    set.Len(),
			dryRun:   kube.ClusterPreflightObjects(ca.Dynamic, set.Kinds(), "the egress-filter scenario's "+mech+" objects"),
		}, nil
	}
	return nil, fmt.Errorf("%q is not a cluster policy mechanism (%s)", mech, strings.Join(PolicyMechanisms, ", "))
}
