package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// admit dry-runs every pod of plans on the API server (every admission
// plugin and webhook runs; nothing is stored) and returns the pods to
// create: a refused privileged host pod is left out, with d.noHost saying
// why (the baseline and the checks that need it are skipped with that
// reason); a refused pod-network pod is an error naming the pod, the rule
// and the fix, before anything runs.
func (d *Deployment) admit(ctx context.Context, plans []podPlan) ([]podPlan, error) {
	var keep []podPlan
	var hostWhy []string
	for _, pl := range plans {
		err := d.dryRun(ctx, pl)
		if err == nil {
			keep = append(keep, pl)
			continue
		}
		if !refusal(err) {
			return nil, fmt.Errorf("dry-run pod %s/%s: %w", d.ns, pl.pod.Name, err)
		}
		why := admissionReason(err)
		if pl.host {
			d.log.Warn("host pod refused by admission; the baseline and the host checks are skipped", "pod", pl.short, "why", why)
			hostWhy = append(hostWhy, pl.short+": "+why)
			continue
		}
		return nil, fmt.Errorf("namespace %s refuses pod %s (%s): %s; %s", d.ns, pl.short, pl.pod.Name, why, admissionFix(d.ns, why, false))
	}
	if len(hostWhy) > 0 {
		d.noHost = "the namespace's admission refuses the privileged hostNetwork pods (" + strings.Join(hostWhy, "; ") + "); " + admissionFix(d.ns, strings.Join(hostWhy, " "), true)
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

// dryRun creates pl's pod in a server-side dry run.
func (d *Deployment) dryRun(ctx context.Context, pl podPlan) error {
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	_, err := d.b.cs.CoreV1().Pods(d.ns).Create(ctx, pl.pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// refusal tells whether err is admission's (or validation's) refusal of
// an object, as opposed to a failure to ask.
func refusal(err error) bool {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return true
	}
	// RBAC's Forbidden ("cannot create resource") is not admission's: the
	// run cannot go on without the verb.
	return apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "cannot create resource")
}

// admissionReason is the refusal's message without the object's name.
func admissionReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "is forbidden: "); i >= 0 {
		msg = msg[i+len("is forbidden: "):]
	}
	return firstLine(msg)
}

// admissionFix says how to get the refused pods admitted; host says they
// are the privileged host pods (which a run can do without).
func admissionFix(ns, why string, host bool) string {
	switch {
	case strings.Contains(why, "PodSecurity"):
		if host {
			return "to measure the node-to-node baseline and run the host checks, label the namespace pod-security.kubernetes.io/enforce=privileged (kubectl label ns " + ns + " pod-security.kubernetes.io/enforce=privileged --overwrite)"
		}
		return "cnibench's pod-network pods meet PodSecurity restricted; check that the image runs as a non-root user and the namespace's policy version (pod-security.kubernetes.io/enforce-version)"
	case strings.Contains(why, "security context constraint"):
		return "on OpenShift grant an SCC to the pods' service account: oc adm policy add-scc-to-user privileged -z default -n " + ns
	case strings.Contains(why, "admission webhook"):
		return "ask the cluster's policy owner for an exception for namespace " + ns + " (the webhook is named in the message)"
	}
	return "see docs/kubernetes.md (first run on a managed cluster)"
}

// dryRunTimeout bounds each dry run (webhooks included).
const dryRunTimeout = 30 * time.Second
