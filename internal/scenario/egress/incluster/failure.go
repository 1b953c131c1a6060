package incluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/scenario"
)

// cniRecoverTimeout bounds the wait, after a failed point's objects are
// removed, for the CNI's pods to be Ready again.
const cniRecoverTimeout = 5 * time.Minute

// failure is what a cluster policy point that failed records besides its
// error (scenario.PointFailure, a finding of the run): what was sent
// before it failed, and the CNI's own account of the point's window (its
// pods' restarts and warning and error lines). Its objects are removed
// whatever happens.
type failure struct {
	ctx    context.Context
	win    *cluster.CNILogWindow // nil: the deployment cannot read the CNI's logs
	mech   string
	n      int
	sent   func() (objects, bytes int)
	total  int // objects of the point
	remove func(context.Context) error
}

// with returns err with the failure's evidence, its objects removed (a
// removal that fails is said in the evidence and joined to the error).
func (f failure) with(err error) (scenario.Prepared, error) {
	ctx := context.WithoutCancel(f.ctx)
	objects, bytes := f.sent()
	ev := []string{fmt.Sprintf("sent %d of %d object(s) before the failure, %d bytes of JSON", objects, f.total, bytes)}
	restarts := 0
	if f.win == nil {
		ev = append(ev, "CNI logs: not read (this deployment cannot read them)")
	} else {
		ce := f.win.Evidence(ctx)
		ev = append(ev, ce.Lines...)
		restarts = ce.Restarts
	}
	rmErr := removeAll(ctx, f.remove)
	if rmErr != nil {
		ev = append(ev, "removal: "+rmErr.Error())
	}
	if f.win != nil {
		// The next point must not measure a CNI still restarting.
		took, notReady := f.win.WaitReady(ctx, cniRecoverTimeout)
		if len(notReady) > 0 {
			ev = append(ev, fmt.Sprintf("after the removal the CNI's pods were not all Ready within %s: %s", cniRecoverTimeout, strings.Join(notReady, ", ")))
		} else {
			ev = append(ev, fmt.Sprintf("after the removal the CNI's pods were Ready (%.0f s later)", took.Seconds()))
		}
	}
	err = scenario.WithEvidence(err, fmt.Sprintf("%s with %d rules", f.mech, f.n), ev, map[string]float64{
		MetricPolicyObjects: float64(objects), MetricPolicyBytes: float64(bytes), "cni_restarts": float64(restarts)})
	return nil, errors.Join(err, rmErr)
}
