package preflight

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The API servers' refusals, worded as they word them (see
// reasons.go for where each comes from).
var (
	baselineHostPod = `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), hostPath volumes (volumes "host-0", "host-1"), privileged (container "cnibench" must not set securityContext.privileged=true)`
	restrictedPod   = `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "cnibench" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "cnibench" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "cnibench" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "cnibench" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	restrictedCaps  = `violates PodSecurity "restricted:v1.30": unrestricted capabilities (container "cnibench" must set securityContext.capabilities.drop=["ALL"]; container "cnibench" must not include "BPF", "NET_ADMIN" in securityContext.capabilities.add), runAsNonRoot != true (pod or container "cnibench" must set securityContext.runAsNonRoot=true)`
	sccMessage      = `unable to validate against any security context constraint: [provider "anyuid": Forbidden: not usable by user or serviceaccount, spec.volumes[0]: Invalid value: "hostPath": hostPath volumes are not allowed to be used, spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed, spec.containers[0].securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used, provider "privileged": Forbidden: not usable by user or serviceaccount]`
)

func forbidden(resource, name, msg string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name, errors.New(msg))
}

// webhookDenial is the error the API server makes of a webhook's denial.
func webhookDenial(webhook, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest,
		Message: `admission webhook "` + webhook + `" denied the request: ` + msg}}
}

func testPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func benchNamespace(labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: labels}}
}

func TestCheckRefusals(t *testing.T) {
	hostPod := Object{Obj: testPod("host-a"), Why: "the node-to-node baseline and the encryption capture", Without: "--checks none --no-host-pods"}
	tests := []struct {
		name    string
		obj     Object
		err     error
		verdict Verdict
		by      string
		rules   []string
		reason  []string // substrings
		fix     []string // substrings
	}{
		{name: "admitted", obj: Object{Obj: testPod("srv-a")}, verdict: Admitted},
		{name: "baseline refuses the host pod", obj: hostPod, err: forbidden("pods", "host-a", baselineHostPod),
			verdict: Refused, by: "PodSecurity baseline:latest", rules: []string{"host namespaces", "hostPath volumes", "privileged"},
			reason: []string{`violates PodSecurity baseline:latest: host namespaces, hostPath volumes, privileged`},
			fix: []string{"pod-security.kubernetes.io/enforce=privileged", "kubectl label namespace bench pod-security.kubernetes.io/enforce=privileged --overwrite",
				"or run without it: --checks none --no-host-pods (it serves the node-to-node baseline and the encryption capture)"}},
		{name: "restricted refuses a pod-network pod: baseline suffices", obj: Object{Obj: testPod("srv-a")}, err: forbidden("pods", "srv-a", restrictedPod),
			verdict: Refused, by: "PodSecurity restricted:latest", rules: []string{"allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"},
			fix: []string{"enforce=baseline --overwrite"}},
		{name: "restricted refuses added capabilities: privileged needed", obj: Object{Obj: testPod("raw")}, err: forbidden("pods", "raw", restrictedCaps),
			verdict: Refused, by: "PodSecurity restricted:v1.30", rules: []string{"unrestricted capabilities", "runAsNonRoot != true"},
			fix: []string{"enforce=privileged --overwrite"}},
		{name: "Kyverno", obj: hostPod, err: webhookDenial("validate.kyverno.svc-fail", "\n\npolicy Pod/bench/host-a for resource violation: \n\ndisallow-host-namespaces:\n  host-namespaces: 'validation error: Sharing the host namespaces is disallowed.'\n"),
			verdict: Refused, by: `webhook "validate.kyverno.svc-fail"`,
			reason: []string{`admission webhook "validate.kyverno.svc-fail" denied the request: policy Pod/bench/host-a for resource violation: disallow-host-namespaces: host-namespaces: 'validation error: Sharing the host namespaces is disallowed.'`},
			fix:    []string{"exempt namespace bench", "Kyverno: a PolicyException", "--no-host-pods"}},
		{name: "Gatekeeper", obj: hostPod, err: webhookDenial("validation.gatekeeper.sh", "[psp-host-network-ports] The specified hostNetwork and hostPort are not allowed, pod: host-a"),
			verdict: Refused, by: `webhook "validation.gatekeeper.sh"`, reason: []string{"[psp-host-network-ports] The specified hostNetwork"}, fix: []string{"excludedNamespaces"}},
		{name: "webhook without explanation", obj: hostPod,
			err:     &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Message: `admission webhook "deny.example.com" denied the request without explanation`}},
			verdict: Refused, by: `webhook "deny.example.com"`, reason: []string{`"deny.example.com" denied the request without explanation`}},
		{name: "ValidatingAdmissionPolicy", obj: hostPod, err: forbidden("pods", "host-a", "ValidatingAdmissionPolicy 'no-host-network' with binding 'no-host-network-binding' denied request: hostNetwork is not allowed"),
			verdict: Refused, by: "ValidatingAdmissionPolicy no-host-network", reason: []string{"denied it: hostNetwork is not allowed"}, fix: []string{"its binding no-host-network-binding"}},
		{name: "OpenShift SCC", obj: Object{Obj: testPod("host-a", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "cnibench" })}, err: forbidden("pods", "host-a", sccMessage),
			verdict: Refused, by: "SecurityContextConstraints",
			reason: []string{"hostPath volumes are not allowed to be used; Privileged containers are not allowed; Host network is not allowed to be used"},
			fix:    []string{"oc adm policy add-scc-to-user privileged -z cnibench -n bench"}},
		{name: "OpenShift SCC, default service account", obj: hostPod, err: forbidden("pods", "host-a", sccMessage),
			verdict: Refused, by: "SecurityContextConstraints", fix: []string{"oc adm policy add-scc-to-user privileged -z default -n bench"}},
		{name: "RBAC", obj: hostPod, err: forbidden("pods", "", `User "system:serviceaccount:bench:cnibench" cannot create resource "pods" in API group "" in the namespace "bench"`),
			verdict: Refused, by: "RBAC", reason: []string{`not allowed to create pods (a dry run needs the create verb too)`}, fix: []string{"cnibench k8s rbac --namespace bench"}},
		{name: "quota", obj: hostPod, err: forbidden("pods", "host-a", "exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10"),
			verdict: Refused, by: "ResourceQuota", fix: []string{"kubectl describe quota -n bench"}},
		{name: "invalid", obj: hostPod, err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "host-a", nil), verdict: Refused, by: "API server"},
		{name: "namespace gone meanwhile", obj: hostPod, err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "bench"),
			verdict: NotChecked, reason: []string{"namespace bench does not exist"}},
		{name: "server error", obj: hostPod, err: apierrors.NewInternalError(errors.New("etcd unavailable")), verdict: NotChecked, reason: []string{"dry run failed: Internal error occurred: etcd unavailable"}},
		{name: "no answer", obj: hostPod, err: context.DeadlineExceeded, verdict: NotChecked, reason: []string{"dry run failed: context deadline exceeded"}},
		{name: "exists already", obj: hostPod, err: apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "host-a"), verdict: Admitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(benchNamespace(map[string]string{PodSecurityEnforceKey: "baseline"}))
			var opts []metav1.CreateOptions
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				opts = append(opts, a.(k8stesting.CreateActionImpl).GetCreateOptions())
				return true, nil, tt.err
			})
			rep := Check(context.Background(), cs, []Object{tt.obj})
			if len(rep.Objects) != 1 {
				t.Fatalf("results %+v", rep.Objects)
			}
			r := rep.Objects[0]
			t.Logf("%+v", r)
			if len(opts) != 1 || !slices.Equal(opts[0].DryRun, []string{metav1.DryRunAll}) {
				t.Errorf("create options %+v: want one dry run", opts)
			}
			if r.Verdict != tt.verdict || r.By != tt.by {
				t.Errorf("verdict %s by %q, want %s by %q", r.Verdict, r.By, tt.verdict, tt.by)
			}
			if tt.rules != nil && !slices.Equal(r.Rules, tt.rules) {
				t.Errorf("rules %q, want %q", r.Rules, tt.rules)
			}
			for _, s := range tt.reason {
				if !strings.Contains(r.Reason, s) {
					t.Errorf("reason %q lacks %q", r.Reason, s)
				}
			}
			for _, s := range tt.fix {
				if !strings.Contains(r.Fix, s) {
					t.Errorf("fix %q lacks %q", r.Fix, s)
				}
			}
			for _, s := range []string{r.Reason, r.Fix, r.Detail} {
				if strings.Contains(s, "\n") {
					t.Errorf("not one line: %q", s)
				}
			}
			if (tt.verdict == Refused) != (r.Fix != "" || tt.by == "API server") {
				t.Errorf("fix %q for verdict %s", r.Fix, r.Verdict)
			}
			reason, refused := rep.Refused("pod/" + r.Name)
			if refused != (tt.verdict == Refused) || (refused && !strings.Contains(reason, r.Reason)) {
				t.Errorf("Refused: %q, %v", reason, refused)
			}
			if rep.AllAdmitted() != (tt.verdict == Admitted) {
				t.Errorf("AllAdmitted %v", rep.AllAdmitted())
			}
		})
	}
}

// Each kind is created with a dry run through its own client; a kind
// Check does not know needs Object.Create, which gets the dry-run
// options.
func TestCheckKinds(t *testing.T) {
	cs := fake.NewClientset(benchNamespace(nil))
	created := map[string][]string{}
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateActionImpl)
		created[a.GetResource().Resource] = c.GetCreateOptions().DryRun
		return true, c.GetObject(), nil
	})
	var createOpts metav1.CreateOptions
	objs := []Object{
		{Obj: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "bench"}}},
		{Obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok", Namespace: "bench"}}},
		{Obj: &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "bench"}}},
		{Kind: "CiliumClusterwideNetworkPolicy", Name: "ccnp", Create: func(_ context.Context, o metav1.CreateOptions) error {
			createOpts = o
			return nil
		}},
		{Obj: &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "bench"}}},
	}
	rep := Check(context.Background(), cs, objs)
	for _, r := range []string{"services", "secrets", "networkpolicies"} {
		if !slices.Equal(created[r], []string{metav1.DryRunAll}) {
			t.Errorf("%s: dry run %v", r, created[r])
		}
	}
	if !slices.Equal(createOpts.DryRun, []string{metav1.DryRunAll}) {
		t.Errorf("Create got %+v", createOpts)
	}
	var got []string
	for _, o := range rep.Objects {
		got = append(got, o.Ref()+" "+string(o.Verdict))
	}
	want := []string{"Service/svc admitted", "Secret/tok admitted", "NetworkPolicy/deny admitted",
		"CiliumClusterwideNetworkPolicy/ccnp admitted", "ReplicationController/rc not-checked"}
	if !slices.Equal(got, want) {
		t.Errorf("results %q, want %q", got, want)
	}
	if r, _ := rep.Result("ReplicationController/rc"); !strings.Contains(r.Reason, "give Object.Create") {
		t.Errorf("unsupported kind: %q", r.Reason)
	}
	// Nothing was persisted by Check itself.
	if l, _ := cs.CoreV1().Services("bench").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("services persisted: %v", l.Items)
	}
}

// A namespace that does not exist cannot hold dry-run objects: its
// objects are not checked (no create is tried), saying so; its Namespace
// object, if given, is dry-run and lends the report its labels.
func TestCheckMissingNamespace(t *testing.T) {
	tests := []struct {
		name      string
		withNS    bool
		reason    string
		nsVerdict Verdict
	}{
		{"without its Namespace object", false, "create it first (kubectl create namespace bench), or dry-run its Namespace object", ""},
		{"with its Namespace object", true, "does not exist yet (its Namespace is dry-run above)", Admitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			var creates []string
			cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				creates = append(creates, a.GetResource().Resource)
				return true, nil, nil
			})
			objs := []Object{{Obj: testPod("host-a")}, {Obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok", Namespace: "bench"}}}}
			if tt.withNS {
				objs = append([]Object{{Obj: benchNamespace(map[string]string{PodSecurityEnforceKey: "privileged", PodSecurityWarnKey: "restricted", "other": "x"})}}, objs...)
			}
			rep := Check(context.Background(), cs, objs)
			t.Logf("\n%s", rep)
			if len(rep.Namespaces) != 1 || rep.Namespaces[0].Exists {
				t.Fatalf("namespaces %+v", rep.Namespaces)
			}
			for _, o := range rep.Objects {
				if o.Kind == "Namespace" {
					if o.Verdict != tt.nsVerdict {
						t.Errorf("namespace verdict %s", o.Verdict)
					}
					continue
				}
				if o.Verdict != NotChecked || !strings.Contains(o.Reason, tt.reason) {
					t.Errorf("%s: %s %q", o.Ref(), o.Verdict, o.Reason)
				}
			}
			wantCreates := 0
			if tt.withNS {
				wantCreates = 1
				n := rep.Namespaces[0]
				if n.PodSecurity("enforce") != "privileged:latest" || n.PodSecurity("warn") != "restricted:latest" || n.Labels["other"] != "" {
					t.Errorf("planned labels %v", n.Labels)
				}
			}
			if len(creates) != wantCreates {
				t.Errorf("creates %v", creates)
			}
			if rep.AllAdmitted() {
				t.Error("AllAdmitted with unchecked objects")
			}
		})
	}
}

// A namespace that cannot be read (RBAC) does not stop the dry runs.
func TestCheckNamespaceUnreadable(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden("namespaces", "bench", `User "u" cannot get resource "namespaces" in API group "" in the namespace "bench"`)
	})
	rep := Check(context.Background(), cs, []Object{{Obj: testPod("srv-a")}})
	if n := rep.Namespaces[0]; n.Exists || !strings.Contains(n.Err, "cannot get resource") {
		t.Errorf("namespace %+v", n)
	}
	if rep.Objects[0].Verdict != Admitted {
		t.Errorf("%+v", rep.Objects[0])
	}
}

func TestPodSecurityRules(t *testing.T) {
	tests := []struct{ detail, want string }{
		{`host namespaces (hostNetwork=true), hostPath volumes (volumes "host-0", "host-1"), privileged (container "cnibench" must not set securityContext.privileged=true)`, "host namespaces|hostPath volumes|privileged"},
		{`runAsNonRoot != true (pod or container "a" must set securityContext.runAsNonRoot=true)`, "runAsNonRoot != true"},
		{`unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]; container "a" must not include "BPF", "NET_ADMIN" in securityContext.capabilities.add), seccompProfile (x)`, "unrestricted capabilities|seccompProfile"},
		{`privileged (container "we, (odd)" must not set securityContext.privileged=true), hostPort (container "b" uses hostPort 80)`, "privileged|hostPort"},
		{`runAsUser=0 (pod must not set runAsUser=0), host namespaces (hostNetwork=true, hostPID=true)`, "runAsUser=0|host namespaces"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(podSecurityRules(tt.detail), "|"); got != tt.want {
			t.Errorf("podSecurityRules(%q) = %q, want %q", tt.detail, got, tt.want)
		}
	}
}

// Report.String, on a report with every verdict, a warning and the
// namespaces' labels: the golden file.
func TestCheckReportString(t *testing.T) {
	cs := fake.NewClientset(benchNamespace(map[string]string{PodSecurityEnforceKey: "baseline", PodSecurityWarnKey: "restricted", PodSecurityWarnKey + "-version": "v1.30"}))
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch name := a.(k8stesting.CreateActionImpl).GetObject().(*corev1.Pod).Name; name {
		case "host-a":
			return true, nil, forbidden("pods", name, baselineHostPod)
		case "cli-a":
			return true, nil, context.DeadlineExceeded
		}
		return true, nil, nil
	})
	objs := []Object{
		{Obj: testPod("srv-a"), Why: "the pod-network server"},
		{Obj: testPod("cli-a")},
		{Obj: testPod("host-a"), Why: "the node-to-node baseline and the captures", Without: "--checks none --no-host-pods"},
		{Obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok", Namespace: "bench"}}},
		{Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "absent"}}},
	}
	rep := Check(context.Background(), cs, objs)
	rep.Objects[0].Warnings = []string{`would violate PodSecurity "restricted:v1.30": runAsNonRoot != true (pod or container "cnibench" must set securityContext.runAsNonRoot=true)`}
	got := rep.String()
	golden := filepath.Join("testdata", "preflight.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Errorf("Report.String differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

// A cluster-scoped object (a CNI's cluster-wide policy, dry-run through
// Object.Create) has no namespace to exempt: its fixes name its kind.
func TestCheckClusterScopedFixes(t *testing.T) {
	ccnp := &unstructured.Unstructured{}
	ccnp.SetAPIVersion("cilium.io/v2")
	ccnp.SetKind("CiliumClusterwideNetworkPolicy")
	ccnp.SetName("cnb-r1-deny-0")
	tests := []struct {
		name string
		err  error
		fix  string
	}{
		{"webhook", webhookDenial("policy.kyverno.svc", "reserved"), "exempt the run's cluster-scoped CiliumClusterwideNetworkPolicy objects from the policy behind webhook policy.kyverno.svc"},
		{"ValidatingAdmissionPolicy", forbidden("ciliumclusterwidenetworkpolicies", "cnb-r1-deny-0", "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"),
			"exclude the run's cluster-scoped CiliumClusterwideNetworkPolicy objects from its binding b (matchResources)"},
		{"RBAC", forbidden("ciliumclusterwidenetworkpolicies", "", `User "u" cannot create resource "ciliumclusterwidenetworkpolicies" in API group "cilium.io" at the cluster scope`),
			"grant create on ciliumclusterwidenetworkpolicies cluster-wide (a ClusterRole)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Check(context.Background(), fake.NewClientset(), []Object{{Obj: ccnp, Create: func(context.Context, metav1.CreateOptions) error { return tt.err }}})
			r := rep.Objects[0]
			if r.Verdict != Refused || !strings.Contains(r.Fix, tt.fix) || strings.Contains(r.Fix, "namespace ") {
				t.Errorf("%s: fix %q, want %q and no namespace", r.Verdict, r.Fix, tt.fix)
			}
		})
	}
}
