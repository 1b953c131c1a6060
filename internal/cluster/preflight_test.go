package cluster

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cnibench/cnibench/internal/backend"
)

// createRec is one create the fake API server received.
type createRec struct {
	resource, name, typ string // typ: a service's type
	dryRun              bool
}

func (c createRec) String() string {
	s := c.resource
	if c.typ != "" {
		s += "/" + c.typ
	}
	if c.dryRun {
		s += " (dry run)"
	}
	return s
}

// recordCreates records every create fc receives, in order, whatever the
// other reactors answer.
func recordCreates(fc *fakeCluster) func() []createRec {
	var mu sync.Mutex
	var recs []createRec
	fc.cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateActionImpl)
		if !ok {
			return false, nil, nil
		}
		r := createRec{resource: a.GetResource().Resource, dryRun: len(ca.CreateOptions.DryRun) > 0}
		if m, err := metaName(ca.GetObject()); err == nil {
			r.name = m
		}
		if s, ok := ca.GetObject().(*corev1.Service); ok {
			r.typ = string(s.Spec.Type)
		}
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		return false, nil, nil
	})
	return func() []createRec {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(recs)
	}
}

func metaName(o runtime.Object) (string, error) {
	if m, ok := o.(metav1.Object); ok {
		return m.GetName(), nil
	}
	return "", errors.New("no name")
}

func webhookDenial(webhook, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest,
		Message: `admission webhook "` + webhook + `" denied the request: ` + msg}}
}

// TestUpPreflightOrder: every object of the run is dry-run before any is
// created: the namespace alone first (the run creates it), then the
// secret, the pods, the service, the LoadBalancer service and the
// check's policies; the objects created are those dry-run.
func TestUpPreflightOrder(t *testing.T) {
	defer func(d time.Duration) { lbPollInterval = d }(lbPollInterval)
	lbPollInterval = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	creates := recordCreates(fc)
	d := up(t, ctx, fc.backend(func(o *Options) { o.LoadBalancer, o.LBTimeout = true, 50*time.Millisecond }))
	if !d.createdNS {
		t.Fatal("the run did not create its namespace")
	}
	recs := creates()
	var got []string
	for _, r := range recs {
		got = append(got, r.String())
	}
	t.Logf("creates: %q", got)
	want := []string{"namespaces (dry run)", "namespaces",
		"secrets (dry run)", "pods (dry run)", "pods (dry run)", "pods (dry run)", "pods (dry run)", "pods (dry run)",
		"services/NodePort (dry run)", "services/LoadBalancer (dry run)",
		"networkpolicies (dry run)", "networkpolicies (dry run)", "networkpolicies (dry run)"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("creates begin %q,\nwant %q", got, want)
	}
	// After the dry runs, only what was dry-run is created.
	dry := map[string]bool{}
	for _, r := range recs[:len(want)] {
		dry[r.resource+"/"+r.name] = true
	}
	for _, r := range recs[len(want):] {
		if r.dryRun || !dry[r.resource+"/"+r.name] {
			t.Errorf("create %s %s: not dry-run first", r, r.name)
		}
	}
	if d.lbWhy == "" || !strings.Contains(d.lbWhy, "no address within 50ms") {
		t.Errorf("lbWhy %q", d.lbWhy)
	}
}

// An existing namespace is used as it is: never dry-run or created (the
// least-privilege RBAC has no right to create namespaces).
func TestUpPreflightExistingNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}})
	fc.refuse = map[string]error{"namespaces": apierrors.NewForbidden(corev1.Resource("namespaces"), "", errors.New(`User "bench" cannot create resource "namespaces" in API group "" at the cluster scope`))}
	creates := recordCreates(fc)
	d := up(t, ctx, fc.backend(nil))
	if d.createdNS {
		t.Error("createdNS for an existing namespace")
	}
	for _, r := range creates() {
		if r.resource == "namespaces" {
			t.Errorf("namespace create: %s", r)
		}
	}
}

// A refusal of what the run needs ends Up in one line naming the object,
// what refused it and the fix, and nothing but the namespace (removed by
// Down) was created.
func TestUpPreflightRefusals(t *testing.T) {
	tests := []struct {
		name   string
		refuse map[string]error
		noNP   bool
		want   []string
	}{
		{name: "namespace, by a webhook", refuse: map[string]error{"namespaces": webhookDenial("ns.policy.example", "namespaces must carry a cost-center label")},
			want: []string{"the cluster refuses to create namespace cnibench", `admission webhook "ns.policy.example" denied the request: namespaces must carry a cost-center label`,
				"fix: ask the cluster's administrator to exempt namespace cnibench", "or create it beforehand (kubectl create namespace cnibench)"}},
		{name: "namespace, by RBAC", refuse: map[string]error{"namespaces": apierrors.NewForbidden(corev1.Resource("namespaces"), "",
			errors.New(`User "bench" cannot create resource "namespaces" in API group "" at the cluster scope`))},
			want: []string{"the cluster refuses to create namespace cnibench", "not allowed to create namespaces", "--existing-namespace"}},
		{name: "secret, by a quota", refuse: map[string]error{"secrets": apierrors.NewForbidden(corev1.Resource("secrets"), "cnibench-token-x",
			errors.New("exceeded quota: q, requested: secrets=1, used: secrets=5, limited: secrets=5"))},
			want: []string{"namespace cnibench refuses secret cnibench-token-", "(the run's token)", "exceeded quota", "fix: raise the namespace's ResourceQuota"}},
		{name: "the service, NodePort and ClusterIP", noNP: true, refuse: map[string]error{"services/ClusterIP": webhookDenial("svc.gatekeeper.sh", "services are reviewed")},
			want: []string{"refuses service cnibench-", "(ClusterIP, after NodePort was refused too)", "svc.gatekeeper.sh", "fix: ask the cluster's administrator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fc := newFakeCluster(t)
			fc.refuse, fc.refuseNodePort = tt.refuse, tt.noNP
			creates := recordCreates(fc)
			dep, err := fc.backend(nil).Up(ctx, backend.Spec{Token: testToken})
			if err == nil {
				t.Fatal("Up succeeded")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error not one line: %q", err)
			}
			for _, r := range creates() {
				if !r.dryRun && r.resource != "namespaces" {
					t.Errorf("created before the preflight passed: %s %s", r, r.name)
				}
			}
			if dep != nil {
				if err := dep.Down(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if inv := fc.inventory(t, DefaultNamespace); len(inv) > 0 {
				t.Errorf("left behind: %v", inv)
			}
			if _, err := fc.cs.CoreV1().Namespaces().Get(ctx, DefaultNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace left behind (%v)", err)
			}
		})
	}
}

// An optional object refused is left out, with the reason and the fix
// where its path or check is reported, and never created: the
// LoadBalancer service, the NodePort, the check's NetworkPolicies.
func TestUpPreflightOptional(t *testing.T) {
	vap := apierrors.NewForbidden(corev1.Resource("networkpolicies"), "x",
		errors.New("ValidatingAdmissionPolicy 'no-deny-all' with binding 'no-deny-all-b' denied request: deny-all policies are reserved"))
	tests := []struct {
		name   string
		refuse map[string]error
		noNP   bool
		lb     bool
		check  func(t *testing.T, d *Deployment)
		never  string // a create (not dry-run) that must not happen
	}{
		{name: "LoadBalancer", lb: true, refuse: map[string]error{"services/LoadBalancer": webhookDenial("lb.kyverno.svc", "no cloud load balancers")},
			never: "services/LoadBalancer", check: func(t *testing.T, d *Deployment) {
				p := d.lbPath(1450, 1500)
				if _, why := p.TargetArgs("tcp_rr"); !strings.Contains(why, "refused a LoadBalancer service") || !strings.Contains(why, "lb.kyverno.svc") ||
					!strings.Contains(why, "fix: ") || !strings.Contains(why, "no --load-balancer") {
					t.Errorf("lb why %q", why)
				}
			}},
		{name: "NodePort", noNP: true, never: "services/NodePort", check: func(t *testing.T, d *Deployment) {
			if d.svc.Spec.Type != corev1.ServiceTypeClusterIP || !strings.Contains(d.nodePortWhy, "NodePort services are not allowed") {
				t.Errorf("service %s, nodePortWhy %q", d.svc.Spec.Type, d.nodePortWhy)
			}
		}},
		{name: "NetworkPolicy", refuse: map[string]error{"networkpolicies": vap}, never: "networkpolicies", check: func(t *testing.T, d *Deployment) {
			fs := d.Findings(context.Background(), measured)
			for _, f := range fs {
				if f.Check != "network_policy" {
					continue
				}
				if f.Verdict != "skipped" || !strings.Contains(f.Summary, "ValidatingAdmissionPolicy no-deny-all") || !strings.Contains(f.Summary, "--checks without network_policy") {
					t.Errorf("network_policy %s %q", f.Verdict, f.Summary)
				}
				return
			}
			t.Errorf("no network_policy finding in %+v", fs)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fc := newFakeCluster(t)
			fc.refuse, fc.refuseNodePort = tt.refuse, tt.noNP
			creates := recordCreates(fc)
			d := up(t, ctx, fc.backend(func(o *Options) {
				o.LoadBalancer, o.LBTimeout = tt.lb, time.Minute // a refused service is not waited for
				o.Checks = []string{"cni", "network_policy"}
			}))
			tt.check(t, d)
			for _, r := range creates() {
				if !r.dryRun && (r.resource == tt.never || r.resource+"/"+r.typ == tt.never) {
					t.Errorf("created although refused: %s %s", r, r.name)
				}
			}
		})
	}
}

// --checks without network_policy: its policies are not dry-run.
func TestUpPreflightNoPolicyCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc := newFakeCluster(t)
	creates := recordCreates(fc)
	up(t, ctx, fc.backend(func(o *Options) { o.Checks = []string{"none"} }))
	for _, r := range creates() {
		if r.resource == "networkpolicies" {
			t.Errorf("policy dry-run without the check: %s %s", r, r.name)
		}
	}
}
