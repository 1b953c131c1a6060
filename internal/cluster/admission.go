package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal/kube"
)

// admit dry-runs every pod of plans on the API server (kube.Preflight:
// every admission plugin and webhook runs, nothing is stored) and returns
// the pods to create: a refused privileged host pod is left out, with
// d.noHost saying why and how to allow it (the baseline and the checks
// that need it are skipped with that reason); a refused pod-network pod
// is an error naming the pod, the rule and the fix, before anything runs.
// --no-host-pods leaves the host pods out from the start.
func (d *Deployment) admit(ctx context.Context, plans []podPlan) ([]podPlan, error) {
	if d.b.o.NoHostPods {
		d.noHost = "--no-host-pods: the privileged hostNetwork pods were not asked for"
	}
	var objs []kube.Object
	for _, pl := range plans {
		why, without := "the pod network's "+pl.short, ""
		if pl.host {
			if d.noHost != "" {
				continue
			}
			why, without = "the node-to-node baseline and the host checks (mtu, encryption, cni_footprint)", "--no-host-pods"
		}
		objs = append(objs, kube.Object{Obj: pl.pod, Why: why, Without: without})
	}
	rep := kube.Preflight(ctx, d.b.cs, objs)
	var keep []podPlan
	var hostWhy []string
	for _, pl := range plans {
		if pl.host && d.noHost != "" {
			continue
		}
		r, ok := rep.Result("Pod/" + pl.pod.Name)
		if !ok || r.Verdict != kube.Refused {
			// Admitted, or not checked (a timeout): the create decides.
			if ok && r.Verdict == kube.NotChecked {
				d.log.Warn("admission dry run not checked", "pod", pl.short, "why", r.Reason)
			}
			keep = append(keep, pl)
			continue
		}
		if pl.host {
			d.log.Warn("host pod refused by admission; the baseline and the host checks are skipped", "pod", pl.short, "by", r.By, "why", r.Reason)
			hostWhy = append(hostWhy, pl.short+": "+r.Reason)
			if len(hostWhy) == 1 {
				hostWhy[0] += "; " + r.Fix
			}
			continue
		}
		return nil, fmt.Errorf("namespace %s refuses pod %s (%s): %s; %s", d.ns, pl.short, pl.pod.Name, r.Reason, r.Fix)
	}
	if len(hostWhy) > 0 {
		d.noHost = "the namespace's admission refuses the privileged hostNetwork pods (" + strings.Join(hostWhy, "; ") + ")"
	}
	if d.noHost != "" {
		// Without one host pod the other has nothing to pair with.
		var out []podPlan
		for _, pl := range keep {
			if !pl.host {
				out = append(out, pl)
			}
		}
		keep = out
	}
	return keep, nil
}
