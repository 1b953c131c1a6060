package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/preflight"
)

// The preflight: nothing of a run is created before the API server has
// admitted it in a server-side dry run (preflight.Check: every admission
// plugin and webhook runs, nothing is stored). A namespaced object can only
// be dry-run in a namespace that exists, so it happens in two steps:
//
//  1. when the namespace does not exist, the Namespace cnibench would
//     create (kube.RunNamespace) is dry-run alone: refused, the run ends
//     in one line and nothing was created; admitted, it is created, empty
//     (an existing namespace is used as it is, and not dry-run: the
//     least-privilege RBAC has no right to create namespaces);
//  2. every other object of the deployment is then dry-run in it before
//     any is created: the token Secret, every pod, the service (NodePort;
//     its ClusterIP fallback when NodePorts are refused), the LoadBalancer
//     service (--load-balancer) and the NetworkPolicies of the
//     network_policy check.
//
// A refusal of what a run cannot do without (the Secret, a pod-network
// pod, the service) ends it in one line naming the object, the rule and
// the fix (a namespace created in step 1 is removed with the run); an
// optional object refused is left out with the reason: the privileged
// host pods (the baseline and the host checks are skipped), the NodePort
// (the nodeport path), the LoadBalancer service (its path), the policies
// (the network_policy check). A dry run that could not be made (no answer)
// is logged and the create decides. A scenario's own objects (its
// services, policies, extra pods) are created at its points, not here:
// each point dry-runs its own first (Admit).

// ensureNamespace is step 1: the namespace, dry-run when the run creates
// it, then created.
func (d *Deployment) ensureNamespace(ctx context.Context) error {
	cs := d.b.cs
	exists, err := kube.NamespaceExists(ctx, cs, d.ns)
	if err != nil {
		return err
	}
	if exists {
		d.log.Debug("namespace exists", "namespace", d.ns)
		return nil
	}
	rep := preflight.Check(ctx, cs, []preflight.Object{{Obj: kube.RunNamespace(d.ns, d.runID), Why: "the run's namespace"}})
	switch r := rep.Objects[0]; r.Verdict {
	case preflight.Refused:
		msg := "the cluster refuses to create namespace " + d.ns + ": " + withFix(r)
		if r.By != "RBAC" {
			msg += "; or create it beforehand (kubectl create namespace " + d.ns + "): a namespace that exists is used as it is"
		}
		return errors.New(msg)
	case preflight.NotChecked:
		d.log.Warn("admission dry run not checked", "namespace", d.ns, "why", r.Reason)
	}
	d.createdNS, err = kube.CreateNamespace(ctx, cs, d.ns, d.runID)
	return err
}

// admit is step 2: it dry-runs the secret, every pod of plans, the
// services and the check's policies, records what optional objects are
// left out (d.noHost, d.nodePortWhy, d.lbWhy, d.noPolicy) and the service
// type to create (d.svcType), and returns the pods to create. --no-host-pods
// leaves the host pods out from the start.
func (d *Deployment) admit(ctx context.Context, plans []podPlan, secret *corev1.Secret) ([]podPlan, error) {
	if d.b.o.NoHostPods {
		d.noHost = "--no-host-pods: the privileged hostNetwork pods were not asked for"
	}
	objs := []preflight.Object{{Obj: secret, Why: "the token the run's servers and clients share"}}
	for _, pl := range plans {
		why, without := "the pod network's "+pl.short, ""
		if pl.host {
			if d.noHost != "" {
				continue
			}
			why, without = "the node-to-node baseline and the host checks (mtu, encryption, cni_footprint)", "--no-host-pods"
		}
		objs = append(objs, preflight.Object{Obj: pl.pod, Why: why, Without: without})
	}
	objs = append(objs, preflight.Object{Obj: d.serviceObj(corev1.ServiceTypeNodePort), Why: "the service paths (pod-to-service, hairpin, pod-to-nodeport)"})
	if d.b.o.LoadBalancer {
		objs = append(objs, preflight.Object{Obj: d.lbServiceObj(), Why: "the pod-to-loadbalancer path", Without: "no --load-balancer"})
	}
	for _, np := range d.policyObjs() {
		objs = append(objs, preflight.Object{Obj: np, Why: "the network_policy check", Without: "--checks without network_policy"})
	}
	rep := preflight.Check(ctx, d.b.cs, objs)
	d.log.Debug("admission dry run", "report", rep.String())
	// refused returns the object's result if it was refused; a dry run
	// that could not be made is logged, and the create decides.
	refused := func(ref string) (preflight.ObjectResult, bool) {
		r, ok := rep.Result(ref)
		if ok && r.Verdict == preflight.NotChecked {
			d.log.Warn("admission dry run not checked", "object", ref, "why", r.Reason)
		}
		return r, ok && r.Verdict == preflight.Refused
	}
	if r, no := refused("Secret/" + secret.Name); no {
		return nil, errors.New(refusal(d.ns, "secret "+secret.Name+" (the run's token)", r))
	}
	keep, err := d.admitPods(plans, refused)
	if err != nil {
		return nil, err
	}
	d.svcType = corev1.ServiceTypeNodePort
	if r, no := refused("Service/" + d.name(svcName)); no {
		// Without NodePorts, a ClusterIP service serves the other
		// service paths: dry-run it too.
		d.nodePortWhy = "the cluster refused a NodePort service: " + withFix(r)
		d.log.Warn("no NodePort service", "why", d.nodePortWhy)
		d.svcType = corev1.ServiceTypeClusterIP
		rep2 := preflight.Check(ctx, d.b.cs, []preflight.Object{{Obj: d.serviceObj(corev1.ServiceTypeClusterIP), Why: "the service paths"}})
		if r := rep2.Objects[0]; r.Verdict == preflight.Refused {
			return nil, errors.New(refusal(d.ns, "service "+d.name(svcName)+" (ClusterIP, after NodePort was refused too)", r))
		}
	}
	if d.b.o.LoadBalancer {
		if r, no := refused("Service/" + d.name(lbName)); no {
			d.lbWhy = "the cluster refused a LoadBalancer service: " + withFix(r)
			d.log.Warn("no LoadBalancer service; the path is skipped", "why", d.lbWhy)
		}
	}
	for _, np := range d.policyObjs() {
		if r, no := refused("NetworkPolicy/" + np.Name); no && d.noPolicy == "" {
			d.noPolicy = "the cluster refuses its NetworkPolicy " + np.Name + ": " + withFix(r)
			d.log.Warn("NetworkPolicy refused; the network_policy check is skipped", "why", d.noPolicy)
		}
	}
	return keep, nil
}

// admitPods returns the pods of plans to create: a refused privileged
// host pod is left out, with d.noHost saying why and how to allow it (the
// baseline and the checks that need it are skipped with that reason); a
// refused pod-network pod is an error naming the pod, the rule and the fix.
func (d *Deployment) admitPods(plans []podPlan, refused func(string) (preflight.ObjectResult, bool)) ([]podPlan, error) {
	var keep []podPlan
	var hostWhy []string
	for _, pl := range plans {
		if pl.host && d.noHost != "" {
			continue
		}
		r, no := refused("Pod/" + pl.pod.Name)
		if !no {
			keep = append(keep, pl)
			continue
		}
		if pl.host {
			d.log.Warn("host pod refused by admission; the baseline and the host checks are skipped", "pod", pl.short, "by", r.By, "why", r.Reason)
			hostWhy = append(hostWhy, pl.short+": "+r.Reason)
			if len(hostWhy) == 1 && r.Fix != "" {
				hostWhy[0] += "; " + r.Fix
			}
			continue
		}
		return nil, errors.New(refusal(d.ns, "pod "+pl.short+" ("+pl.pod.Name+")", r))
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

// refusal is the one line of a refused object the run needs.
func refusal(ns, what string, r preflight.ObjectResult) string {
	return "namespace " + ns + " refuses " + what + ": " + withFix(r)
}

// withFix is r's reason and, if it has one, its fix.
func withFix(r preflight.ObjectResult) string {
	if r.Fix == "" {
		return r.Reason
	}
	return r.Reason + "; fix: " + r.Fix
}

// serviceSelector selects the run's service backend (srv-b).
func (d *Deployment) serviceSelector() map[string]string {
	return map[string]string{"cnibench.io/service": d.runID}
}

// serviceObj is the run's service, of type typ (NodePort, so with a
// ClusterIP too; ClusterIP where NodePorts are refused).
func (d *Deployment) serviceObj(typ corev1.ServiceType) *corev1.Service {
	ports := []corev1.ServicePort{
		{Name: "bench", Port: svcPort, TargetPort: intstr.FromInt32(svcPort), Protocol: corev1.ProtocolTCP},
		{Name: "hairpin", Port: hairpinPort, TargetPort: intstr.FromInt32(hairpinPort), Protocol: corev1.ProtocolTCP},
		{Name: "nodeport", Port: nodePortPort, TargetPort: intstr.FromInt32(nodePortPort), Protocol: corev1.ProtocolTCP},
		{Name: "http", Port: httpPort, TargetPort: intstr.FromInt32(httpPort), Protocol: corev1.ProtocolTCP},
	}
	return kube.BuildService(d.ns, d.runID, d.name(svcName), d.serviceSelector(), ports, typ, withFamilies(families(d.b.o.IPFamily)))
}

// lbServiceObj is the LoadBalancer service of --load-balancer (the first
// family only).
func (d *Deployment) lbServiceObj() *corev1.Service {
	ports := []corev1.ServicePort{
		{Name: "bench", Port: svcPort, TargetPort: intstr.FromInt32(svcPort), Protocol: corev1.ProtocolTCP},
		{Name: "http", Port: httpPort, TargetPort: intstr.FromInt32(httpPort), Protocol: corev1.ProtocolTCP},
	}
	return kube.BuildService(d.ns, d.runID, d.name(lbName), d.serviceSelector(), ports, corev1.ServiceTypeLoadBalancer,
		withFamilies(families(d.b.o.IPFamily)[:1]))
}

// policyObjs are the NetworkPolicies the network_policy check applies
// (each once), none if the check does not run.
func (d *Deployment) policyObjs() []*networkingv1.NetworkPolicy {
	if !d.wantsCheck("network_policy") {
		return nil
	}
	var out []*networkingv1.NetworkPolicy
	seen := map[string]bool{}
	for _, pc := range policyCases {
		for _, np := range pc.policies(d) {
			if !seen[np.Name] {
				seen[np.Name] = true
				out = append(out, np)
			}
		}
	}
	return out
}

// wantsCheck tells whether --checks selects check c.
func (d *Deployment) wantsCheck(c string) bool {
	return len(d.b.o.Checks) == 0 || slices.Contains(d.b.o.Checks, c)
}
