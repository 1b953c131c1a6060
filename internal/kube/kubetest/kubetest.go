// Package kubetest holds what tests of Kubernetes code share about the
// fake clients: the verbs they lack.
package kubetest

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// DeleteCollectionReactor implements deletecollection, which the fake
// clients lack, on tracker (a reactor runs under the fake's lock: it uses
// the tracker, never the client); kinds maps resources to their kinds.
func DeleteCollectionReactor(tracker k8stesting.ObjectTracker, kinds map[schema.GroupVersionResource]schema.GroupVersionKind) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		dc := a.(k8stesting.DeleteCollectionAction)
		gvr, ns := dc.GetResource(), dc.GetNamespace()
		sel := dc.GetListRestrictions().Labels
		if sel == nil {
			sel = labels.Everything()
		}
		l, err := tracker.List(gvr, kinds[gvr], ns)
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return true, nil, err
		}
		for _, o := range items {
			m, _ := meta.Accessor(o)
			if sel.Matches(labels.Set(m.GetLabels())) {
				if err := tracker.Delete(gvr, m.GetNamespace(), m.GetName()); err != nil {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	}
}
