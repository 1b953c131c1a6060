package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/pkg/result"
)

// policyWait bounds how long a policy may take to be enforced (CNIs
// program their datapath asynchronously) or lifted; policyPoll is how
// often the connection is tried meanwhile (variables: tests shorten them).
var (
	policyWait = 10 * time.Second
	policyPoll = 500 * time.Millisecond
)

// policyCase is one NetworkPolicy test: policies applied, a connection
// from one pod to another, and whether it should be refused.
type policyCase struct {
	name     string
	policies func(d *Deployment) []*networkingv1.NetworkPolicy
	from     string // short pod name of the client
	to       string // short pod name of the server
	refused  bool   // expected with an enforcing CNI
}

var policyCases = []policyCase{
	{name: "ingress deny", from: podCliA, to: podSrvB, refused: true, policies: func(d *Deployment) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{kube.DenyAllIngress(d.ns, d.runID, d.name("deny-in"), d.podLabels(podSrvB))}
	}},
	{name: "allow-listed ingress (allowed client)", from: podCliA, to: podSrvB, refused: false, policies: func(d *Deployment) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{
			kube.DenyAllIngress(d.ns, d.runID, d.name("deny-in"), d.podLabels(podSrvB)),
			kube.AllowIngressFrom(d.ns, d.runID, d.name("allow-cli"), d.podLabels(podSrvB), d.podLabels(podCliA), int32(engine.DefaultPort)),
		}
	}},
	{name: "allow-listed ingress (other client)", from: podSrvA, to: podSrvB, refused: true, policies: func(d *Deployment) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{
			kube.DenyAllIngress(d.ns, d.runID, d.name("deny-in"), d.podLabels(podSrvB)),
			kube.AllowIngressFrom(d.ns, d.runID, d.name("allow-cli"), d.podLabels(podSrvB), d.podLabels(podCliA), int32(engine.DefaultPort)),
		}
	}},
	{name: "egress deny", from: podCliA, to: podSrvB, refused: true, policies: func(d *Deployment) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{kube.DenyAllEgress(d.ns, d.runID, d.name("deny-out"), d.podLabels(podCliA))}
	}},
}

// podLabels selects exactly one of the run's pods.
func (d *Deployment) podLabels(short string) map[string]string {
	return map[string]string{kube.RunKey: d.runID, "cnibench.io/pod": short}
}

// connect tries TCP connections from one pod to another's server port.
func (d *Deployment) connect(ctx context.Context, from, to string) (agent.Connect, error) {
	target := net.JoinHostPort(d.pods[to].Status.PodIP, strconv.Itoa(engine.DefaultPort))
	var c agent.Connect
	err := d.agentJSON(ctx, from, []string{"connect", "--target", target, "--timeout", "1s", "--count", "2"}, &c)
	return c, err
}

// checkPolicy tests NetworkPolicy with real connections: first without a
// policy (it must connect, or the test says nothing), then each case; a
// policy's effect is awaited (bounded), since CNIs apply it
// asynchronously. A CNI that ignores NetworkPolicy is "not-enforced": a
// true finding about the cluster, not an error.
func (d *Deployment) checkPolicy(ctx context.Context) result.Finding {
	f := result.Finding{Metrics: map[string]float64{}}
	c, err := d.connect(ctx, podCliA, podSrvB)
	if err != nil || c.Connected == 0 {
		f.Verdict, f.Summary = "skipped", "without any policy the client pod cannot connect to the server pod, so a refusal would prove nothing"
		if err != nil {
			f.Evidence = []string{err.Error()}
		} else {
			f.Evidence = c.Errors
		}
		return f
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("no policy: %s → %s connected (%d of %d)", podCliA, podSrvB, c.Connected, c.Attempts))
	asExpected, ran := 0, 0
	for _, pc := range policyCases {
		if ctx.Err() != nil {
			break
		}
		ok, line := d.runPolicyCase(ctx, pc)
		f.Evidence = append(f.Evidence, line)
		ran++
		if ok {
			asExpected++
		}
	}
	f.Metrics["cases"] = float64(ran)
	f.Metrics["cases_as_expected"] = float64(asExpected)
	switch {
	case ran == 0:
		f.Verdict, f.Summary = "skipped", "interrupted"
	case asExpected == ran:
		f.Verdict, f.Summary = "enforced", fmt.Sprintf("NetworkPolicy is enforced: %d of %d cases behaved as the policies say (ingress deny, allow list, egress deny)", asExpected, ran)
	case asExpected == countAllowed():
		f.Verdict, f.Summary = "not-enforced", "NetworkPolicy is not enforced: every connection the policies deny was still accepted"
	default:
		f.Verdict, f.Summary = "partial", fmt.Sprintf("NetworkPolicy is partly enforced: %d of %d cases behaved as the policies say", asExpected, ran)
	}
	return f
}

// countAllowed is the number of cases whose connection is allowed: the
// only ones a CNI that enforces nothing gets right.
func countAllowed() int {
	n := 0
	for _, pc := range policyCases {
		if !pc.refused {
			n++
		}
	}
	return n
}

// runPolicyCase applies a case's policies, waits (bounded) for the
// expected outcome, records what was seen, and removes the policies,
// waiting until the path connects again.
func (d *Deployment) runPolicyCase(ctx context.Context, pc policyCase) (bool, string) {
	pols := pc.policies(d)
	defer func() {
		for _, p := range pols {
			if err := kube.DeletePolicy(context.WithoutCancel(ctx), d.b.cs, d.ns, p.Name); err != nil {
				d.log.Warn("delete policy", "name", p.Name, "err", err)
			}
		}
		// Lifted: the path connects again before the next case.
		_ = wait.PollUntilContextTimeout(ctx, policyPoll, policyWait, true, func(ctx context.Context) (bool, error) {
			c, err := d.connect(ctx, pc.from, pc.to)
			return err == nil && c.Connected > 0, nil
		})
	}()
	for _, p := range pols {
		if err := kube.ApplyPolicy(ctx, d.b.cs, p); err != nil {
			return false, fmt.Sprintf("%s: could not apply the policy: %v", pc.name, err)
		}
	}
	// The last probe that ran to its end decides; one cut short by the
	// wait's deadline says nothing.
	var last *agent.Connect
	var lastErr error
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, policyPoll, policyWait, true, func(pctx context.Context) (bool, error) {
		c, err := d.connect(pctx, pc.from, pc.to)
		if err != nil {
			if pctx.Err() == nil {
				lastErr = err
			}
			return false, nil
		}
		last, lastErr = &c, nil
		refused := c.Connected == 0
		return refused == pc.refused, nil
	})
	want := "refused"
	if !pc.refused {
		want = "connects"
	}
	if last == nil {
		if lastErr == nil {
			lastErr = err
		}
		return false, fmt.Sprintf("%s: %s → %s: probe failed: %v", pc.name, pc.from, pc.to, lastErr)
	}
	got := fmt.Sprintf("connected %d of %d", last.Connected, last.Attempts)
	if last.Connected == 0 && len(last.Errors) > 0 {
		got = "refused (" + last.Errors[0] + ")"
	}
	if err != nil {
		return false, fmt.Sprintf("%s: %s → %s: expected %s, still %s after %s", pc.name, pc.from, pc.to, want, got, policyWait)
	}
	return true, fmt.Sprintf("%s: %s → %s: %s as expected (after %.1fs)", pc.name, pc.from, pc.to, got, time.Since(start).Seconds())
}
