package preflight

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Object is an object a run would create, for Check to create with a
// server-side dry run: the API server runs every admission plugin and
// webhook on it and persists nothing.
type Object struct {
	// Obj is the object, with its name and namespace set. Check
	// creates *corev1.Pod, *corev1.Service, *corev1.Secret,
	// *corev1.ConfigMap, *corev1.Namespace, *networkingv1.NetworkPolicy
	// and *discoveryv1.EndpointSlice itself; another kind needs Create.
	Obj runtime.Object
	// Kind, Name and Namespace name the object in the report; "" takes
	// them from Obj.
	Kind, Name, Namespace string
	// Why says what the run needs the object for ("the node-to-node
	// baseline and the encryption capture"), for the report's fixes.
	Why string
	// Without, if not "", are the flags with which a run does without
	// the object ("--checks none --no-host-pods"), offered as a fix.
	Without string
	// Create, if not nil, creates the object with opts (which ask for
	// the dry run): for kinds Check does not create itself, such as
	// the CNIs' policy objects through the dynamic client.
	Create func(ctx context.Context, opts metav1.CreateOptions) error
}

// ref is the object's "Kind/name" (Kind/namespace/name is not needed: a
// run's objects have distinct names).
func (o Object) ref() string { return o.Kind + "/" + o.Name }

// Verdict is what the dry run of an object found.
type Verdict string

// Verdicts of ObjectResult.
const (
	// Admitted: the API server and its admission accept the object.
	Admitted Verdict = "admitted"
	// Refused: the API server or an admission plugin or webhook refuses
	// it; a run would fail where it creates it.
	Refused Verdict = "refused"
	// NotChecked: the dry run could not be made (the namespace does not
	// exist, the API server did not answer, the kind is unsupported).
	NotChecked Verdict = "not-checked"
)

// ObjectResult is the dry run of one Object.
type ObjectResult struct {
	Kind, Name, Namespace, Why string
	Verdict                    Verdict
	// By names what refused it: "PodSecurity baseline:latest",
	// `webhook "validation.gatekeeper.sh"`, "SecurityContextConstraints",
	// "ValidatingAdmissionPolicy NAME", "RBAC", "ResourceQuota", "API
	// server"; "" unless Refused.
	By string
	// Rules are the Pod Security checks the object violates ("host
	// namespaces", "hostPath volumes", "privileged",
	// "allowPrivilegeEscalation != false", …), for a PodSecurity refusal.
	Rules []string
	// Reason is one line: why it was refused or not checked.
	Reason string
	// Detail is the API server's whole message, on one line.
	Detail string
	// Fix is one line: what lets the run create it.
	Fix string
	// Warnings are the admission warnings of its dry run (Pod Security
	// warn mode, webhooks' warnings), if a WarningCollector was given.
	Warnings []string
}

// Ref is the result's "Kind/name".
func (r ObjectResult) Ref() string { return r.Kind + "/" + r.Name }

// Pod Security admission's namespace labels.
const (
	podSecurityPrefix = "pod-security.kubernetes.io/"
	// PodSecurityEnforceKey, PodSecurityWarnKey and PodSecurityAuditKey
	// set a namespace's enforced, warned and audited levels; each has a
	// "-version" companion.
	PodSecurityEnforceKey = podSecurityPrefix + "enforce"
	PodSecurityWarnKey    = podSecurityPrefix + "warn"
	PodSecurityAuditKey   = podSecurityPrefix + "audit"
)

// NamespaceInfo is what Check found of a namespace of the objects.
type NamespaceInfo struct {
	Name string
	// Exists is true if it exists; false if it does not or if it could
	// not be read (Err says why).
	Exists bool
	// Err, if not "", is why it could not be read (one line).
	Err string
	// Labels are its Pod Security labels (pod-security.kubernetes.io/
	// enforce, warn, audit and their -version), when it exists, or those
	// of the Namespace object among Check's objects that would
	// create it.
	Labels map[string]string
}

// PodSecurity returns the level and version of mode ("enforce", "warn",
// "audit") as Pod Security admission names them ("baseline:latest"), ""
// if the namespace has no label for mode (the cluster's default applies,
// privileged unless the admission configuration says otherwise).
func (n NamespaceInfo) PodSecurity(mode string) string {
	level, ok := n.Labels[podSecurityPrefix+mode]
	if !ok {
		return ""
	}
	version := n.Labels[podSecurityPrefix+mode+"-version"]
	if version == "" {
		version = "latest"
	}
	return level + ":" + version
}

// Report is the result of Check.
type Report struct {
	// Namespaces are the objects' namespaces, in the order they first
	// appear.
	Namespaces []NamespaceInfo
	// Objects are the results, in the order of the objects.
	Objects []ObjectResult
	// Warnings are the warnings the WarningCollector received outside
	// the dry runs (other requests of its client; the most recent ones).
	Warnings []string
}

// Option configures Check.
type Option func(*config)

type config struct {
	warnings *WarningCollector
	timeout  time.Duration
}

// WithWarnings attaches the admission warnings c collects (c must be
// the WarningHandlerWithContext of the rest.Config of cs) to the objects
// whose dry runs drew them.
func WithWarnings(c *WarningCollector) Option {
	return func(p *config) { p.warnings = c }
}

// WithTimeout bounds each API call of Check (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(p *config) { p.timeout = d }
}

// DefaultTimeout bounds each API call of Check unless WithTimeout says
// otherwise.
const DefaultTimeout = 10 * time.Second

// Check creates each of objs with a server-side dry run
// (metav1.DryRunAll), so that the API server runs its admission plugins
// and webhooks on them without persisting anything, and reports, per
// object, whether it was admitted and, if refused, why in one line (the
// Pod Security rules violated, the webhook that denied it, OpenShift's
// SCCs, RBAC) and a fix. It reads the Pod Security labels of the objects'
// namespaces. A namespace that does not exist cannot hold dry-run objects:
// its objects are NotChecked, saying so (create the namespace first, or
// include its Namespace object to dry-run it). A dry run needs the same
// RBAC verbs as a create. Each API call is bounded by WithTimeout;
// Check itself never fails: what it could not check is NotChecked.
func Check(ctx context.Context, cs kubernetes.Interface, objs []Object, opts ...Option) Report {
	cfg := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	objs = describe(objs)
	var rep Report
	nsIndex := map[string]int{}
	planned := map[string]map[string]string{} // Namespace objects: their labels
	for _, o := range objs {
		if ns, ok := o.Obj.(*corev1.Namespace); ok {
			planned[ns.Name] = podSecurityLabels(ns.Labels)
		}
		if o.Namespace == "" {
			continue
		}
		if _, seen := nsIndex[o.Namespace]; !seen {
			nsIndex[o.Namespace] = len(rep.Namespaces)
			rep.Namespaces = append(rep.Namespaces, readNamespace(ctx, cs, o.Namespace, cfg.timeout))
		}
	}
	for i, n := range rep.Namespaces {
		if !n.Exists && n.Err == "" && planned[n.Name] != nil {
			rep.Namespaces[i].Labels = planned[n.Name]
		}
	}
	for _, o := range objs {
		res := ObjectResult{Kind: o.Kind, Name: o.Name, Namespace: o.Namespace, Why: o.Why}
		if o.Namespace != "" {
			if n := rep.Namespaces[nsIndex[o.Namespace]]; !n.Exists && n.Err == "" {
				res.Verdict, res.Reason = NotChecked, missingNamespace(n.Name, planned[n.Name] != nil)
				rep.Objects = append(rep.Objects, res)
				continue
			}
		}
		callCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
		var took func() []string
		if cfg.warnings != nil {
			callCtx, took = cfg.warnings.Collect(callCtx)
		}
		err := dryRunCreate(callCtx, cs, o)
		cancel()
		if took != nil {
			res.Warnings = took()
		}
		judge(&res, o, err)
		rep.Objects = append(rep.Objects, res)
	}
	if cfg.warnings != nil {
		rep.Warnings = cfg.warnings.Unattributed()
	}
	return rep
}

// describe fills each object's Kind, Name and Namespace from its Obj.
func describe(objs []Object) []Object {
	out := make([]Object, len(objs))
	for i, o := range objs {
		if o.Obj != nil {
			if o.Kind == "" {
				o.Kind = kindOf(o.Obj)
			}
			if m, err := meta.Accessor(o.Obj); err == nil {
				if o.Name == "" {
					o.Name = m.GetName()
				}
				if o.Namespace == "" {
					o.Namespace = m.GetNamespace()
				}
			}
		}
		if _, ok := o.Obj.(*corev1.Namespace); ok {
			o.Namespace = ""
		}
		out[i] = o
	}
	return out
}

// kindOf names the kind of a typed object (whose TypeMeta is usually
// empty).
func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	switch obj.(type) {
	case *corev1.Pod:
		return "Pod"
	case *corev1.Service:
		return "Service"
	case *corev1.Secret:
		return "Secret"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Namespace:
		return "Namespace"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	case *discoveryv1.EndpointSlice:
		return "EndpointSlice"
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// readNamespace reads namespace name's Pod Security labels.
func readNamespace(ctx context.Context, cs kubernetes.Interface, name string, timeout time.Duration) NamespaceInfo {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return NamespaceInfo{Name: name, Exists: true, Labels: podSecurityLabels(n.Labels)}
	case apierrors.IsNotFound(err):
		return NamespaceInfo{Name: name}
	default:
		return NamespaceInfo{Name: name, Err: "get namespace " + name + ": " + oneLine(err.Error())}
	}
}

func podSecurityLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if strings.HasPrefix(k, podSecurityPrefix) {
			out[k] = v
		}
	}
	return out
}

func missingNamespace(ns string, planned bool) string {
	if planned {
		return "namespace " + ns + " does not exist yet (its Namespace is dry-run above): dry-run objects need an existing namespace; create it first to check them"
	}
	return "namespace " + ns + " does not exist: dry-run objects need an existing namespace; create it first (kubectl create namespace " + ns + "), or dry-run its Namespace object"
}

// dryRunCreate creates o with a server-side dry run.
func dryRunCreate(ctx context.Context, cs kubernetes.Interface, o Object) error {
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if o.Create != nil {
		return o.Create(ctx, opts)
	}
	var err error
	switch obj := o.Obj.(type) {
	case *corev1.Pod:
		_, err = cs.CoreV1().Pods(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.Service:
		_, err = cs.CoreV1().Services(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.Secret:
		_, err = cs.CoreV1().Secrets(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.ConfigMap:
		_, err = cs.CoreV1().ConfigMaps(obj.Namespace).Create(ctx, obj, opts)
	case *corev1.Namespace:
		_, err = cs.CoreV1().Namespaces().Create(ctx, obj, opts)
	case *networkingv1.NetworkPolicy:
		_, err = cs.NetworkingV1().NetworkPolicies(obj.Namespace).Create(ctx, obj, opts)
	case *discoveryv1.EndpointSlice:
		_, err = cs.DiscoveryV1().EndpointSlices(obj.Namespace).Create(ctx, obj, opts)
	default:
		return errUnsupported{o.Obj}
	}
	return err
}

type errUnsupported struct{ obj runtime.Object }

func (e errUnsupported) Error() string {
	return fmt.Sprintf("preflight cannot create a %T (give Object.Create)", e.obj)
}

// namespace returns what r found of namespace ns.
func (r Report) namespace(ns string) NamespaceInfo {
	for _, n := range r.Namespaces {
		if n.Name == ns {
			return n
		}
	}
	return NamespaceInfo{Name: ns}
}

// Refused tells whether the object ref ("Kind/name", e.g. "Pod/host-a";
// the kind's case does not matter) was refused, and why (the reason and
// the fix, one line).
func (r Report) Refused(ref string) (reason string, refused bool) {
	for _, o := range r.Objects {
		if o.Verdict == Refused && strings.EqualFold(o.Kind, kindPart(ref)) && o.Name == namePart(ref) {
			s := o.Reason
			if o.Fix != "" {
				s += "; fix: " + o.Fix
			}
			return s, true
		}
	}
	return "", false
}

func kindPart(ref string) string { k, _, _ := strings.Cut(ref, "/"); return k }
func namePart(ref string) string { _, n, _ := strings.Cut(ref, "/"); return n }

// AllAdmitted tells whether every object was admitted.
func (r Report) AllAdmitted() bool {
	for _, o := range r.Objects {
		if o.Verdict != Admitted {
			return false
		}
	}
	return true
}

// Result returns the result of the object ref ("Kind/name").
func (r Report) Result(ref string) (ObjectResult, bool) {
	for _, o := range r.Objects {
		if strings.EqualFold(o.Kind, kindPart(ref)) && o.Name == namePart(ref) {
			return o, true
		}
	}
	return ObjectResult{}, false
}
