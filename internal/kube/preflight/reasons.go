package preflight

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The refusals Check recognises, as the API servers word them:
//
//   - Pod Security admission (k8s.io/pod-security-admission, admission.go):
//     `pods "x" is forbidden: violates PodSecurity "baseline:latest": host
//     namespaces (hostNetwork=true), hostPath volumes (volumes "a", "b"),
//     privileged (container "c" must not set securityContext.privileged=true)`,
//     the checks' reasons joined by ", " with their details in parentheses
//     (policy.AggregateCheckResult.ForbiddenDetail); its warn mode sends
//     `would violate PodSecurity "restricted:latest": …` as a warning;
//   - admission webhooks (apiserver's webhook errors.ToStatusErr):
//     `admission webhook "name" denied the request: message` (or "…
//     denied the request without explanation");
//   - ValidatingAdmissionPolicy: `pods "x" is forbidden:
//     ValidatingAdmissionPolicy 'p' with binding 'b' denied request: message`
//     (or without the binding);
//   - OpenShift's SecurityContextConstraints: `pods "x" is forbidden:
//     unable to validate against any security context constraint: […]`;
//   - RBAC: `pods is forbidden: User "u" cannot create resource "pods" in
//     API group "" in the namespace "ns"`;
//   - ResourceQuota: `pods "x" is forbidden: exceeded quota: q, …`.
var (
	podSecurityRE = regexp.MustCompile(`violates PodSecurity "([^"]*)": (.*)$`)
	webhookRE     = regexp.MustCompile(`admission webhook "([^"]*)" denied the request(?::\s*|\s+)(.*)$`)
	vapRE         = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']*)'(?: with binding '([^']*)')? denied request: (.*)$`)
	rbacRE        = regexp.MustCompile(`cannot create resource "([^"]*)"`)
)

// restrictedOnly are the Pod Security checks of the restricted level that
// the baseline level does not make: an object violating only these is
// admitted under enforce=baseline.
var restrictedOnly = []string{"allowPrivilegeEscalation != false", "runAsNonRoot != true", "runAsUser=0", "seccompProfile", "restricted volume types", "unrestricted capabilities"}

// judge sets res's verdict, reason and fix from the dry run's error.
func judge(res *ObjectResult, o Object, err error) {
	if err == nil {
		res.Verdict = Admitted
		return
	}
	var unsupported errUnsupported
	if errors.As(err, &unsupported) {
		res.Verdict, res.Reason = NotChecked, err.Error()
		return
	}
	msg := oneLine(err.Error())
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// No answer of the API server: a timeout, a refused connection.
		res.Verdict, res.Reason = NotChecked, "dry run failed: "+msg
		return
	}
	res.Detail = msg
	ns := res.Namespace
	if res.Kind == "Namespace" {
		// A namespace's fixes are about itself.
		ns = res.Name
	}
	switch {
	case apierrors.IsAlreadyExists(err):
		// The storage's answer, after admission has passed.
		res.Verdict, res.Reason = Admitted, "admitted; an object of that name exists already"
		return
	case apierrors.IsNotFound(err) && status.Status().Details != nil && status.Status().Details.Kind == "namespaces":
		res.Verdict, res.Reason = NotChecked, missingNamespace(ns, false)
		return
	}
	res.Verdict = Refused
	// scope is what an administrator exempts: the namespace, or for a
	// cluster-scoped object (a CNI's cluster-wide policy) its kind.
	scope := "namespace " + ns
	if ns == "" {
		scope = "the run's cluster-scoped " + res.Kind + " objects"
	}
	switch m := podSecurityRE.FindStringSubmatch(msg); {
	case m != nil:
		res.By = "PodSecurity " + m[1]
		res.Rules = podSecurityRules(m[2])
		res.Reason = "violates PodSecurity " + m[1] + ": " + strings.Join(res.Rules, ", ")
		level := "privileged"
		if podSecurityBaselineSuffices(m[2], res.Rules) {
			level = "baseline"
		}
		res.Fix = "label the namespace pod-security.kubernetes.io/enforce=" + level +
			" (kubectl label namespace " + ns + " pod-security.kubernetes.io/enforce=" + level + " --overwrite)" + without(o)
		return
	}
	if m := webhookRE.FindStringSubmatch(msg); m != nil {
		res.By = `webhook "` + m[1] + `"`
		res.Reason = `admission webhook "` + m[1] + `" denied the request: ` + m[2]
		if m[2] == "without explanation" {
			res.Reason = `admission webhook "` + m[1] + `" denied the request without explanation`
		}
		res.Fix = "ask the cluster's administrator to exempt " + scope + " from the policy behind webhook " + m[1] + webhookHint(m[1]) + without(o)
		return
	}
	if m := vapRE.FindStringSubmatch(msg); m != nil {
		res.By = "ValidatingAdmissionPolicy " + m[1]
		res.Reason = "ValidatingAdmissionPolicy " + m[1] + " denied it: " + m[3]
		binding := "its binding"
		if m[2] != "" {
			binding = "its binding " + m[2]
		}
		match := "matchResources"
		if ns != "" {
			match += ".namespaceSelector"
		}
		res.Fix = "ask the cluster's administrator to exclude " + scope + " from " + binding + " (" + match + ")" + without(o)
		return
	}
	switch {
	case strings.Contains(msg, "unable to validate against any security context constraint"):
		res.By = "SecurityContextConstraints"
		res.Reason = "no OpenShift SecurityContextConstraints admits it (" + sccProblems(msg) + ")"
		res.Fix = "oc adm policy add-scc-to-user privileged -z " + serviceAccountOf(o) + " -n " + ns + without(o)
	case apierrors.IsForbidden(err) && rbacRE.MatchString(msg):
		resource := rbacRE.FindStringSubmatch(msg)[1]
		res.By = "RBAC"
		res.Reason = "not allowed to create " + resource + " (a dry run needs the create verb too): " + msg
		res.Fix = "grant create on " + resource + " in namespace " + ns + ": cnibench k8s rbac --namespace " + ns + " prints the rights"
		if ns == "" {
			res.Fix = "grant create on " + resource + " cluster-wide (a ClusterRole): cnibench k8s rbac prints the rights"
		}
		if res.Kind == "Namespace" {
			res.Fix = "grant create on namespaces (cnibench k8s rbac --namespace " + ns + " prints the rights), or create namespace " + ns +
				" beforehand and use it as it is (cnibench k8s rbac --namespace " + ns + " --existing-namespace)"
		}
	case strings.Contains(msg, "exceeded quota"):
		res.By = "ResourceQuota"
		res.Reason = msg
		res.Fix = "raise the namespace's ResourceQuota (kubectl describe quota -n " + ns + ") or use another namespace"
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		res.By = "API server"
		res.Reason = msg
	default:
		// Throttled, server errors, timeouts: the answer is not about
		// the object.
		res.Verdict, res.By, res.Reason = NotChecked, "", "dry run failed: "+msg
	}
}

// podSecurityRules returns the check names of a Pod Security detail
// ("host namespaces (hostNetwork=true), privileged (container …)"): its
// parts separated by ", " outside parentheses and quotes, without their
// parenthesised details.
func podSecurityRules(detail string) []string {
	var rules []string
	depth, quoted, start := 0, false, 0
	flush := func(end int) {
		part := strings.TrimSpace(detail[start:end])
		if i := strings.Index(part, " ("); i >= 0 {
			part = part[:i]
		}
		if part != "" {
			rules = append(rules, part)
		}
	}
	for i := 0; i < len(detail); i++ {
		switch c := detail[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth = max(depth-1, 0)
		case c == ',' && depth == 0 && i+1 < len(detail) && detail[i+1] == ' ':
			flush(i)
			start = i + 2
			i++
		}
	}
	flush(len(detail))
	return rules
}

// podSecurityBaselineSuffices tells whether a pod refused for rules would
// be admitted under the baseline level: only restricted-only checks
// failed, and the capabilities check only for not dropping ALL (adding a
// capability, such as NET_ADMIN, baseline refuses too).
func podSecurityBaselineSuffices(detail string, rules []string) bool {
	for _, r := range rules {
		if !slices.Contains(restrictedOnly, r) {
			return false
		}
	}
	return !strings.Contains(detail, "in securityContext.capabilities.add")
}

// without is the fix's alternative of doing without the object.
func without(o Object) string {
	if o.Without == "" {
		return ""
	}
	s := ", or run without it: " + o.Without
	if o.Why != "" {
		s += " (it serves " + o.Why + ")"
	}
	return s
}

// webhookHint names the usual exemption of well-known policy engines.
func webhookHint(name string) string {
	switch {
	case strings.Contains(name, "kyverno"):
		return " (Kyverno: a PolicyException)"
	case strings.Contains(name, "gatekeeper"):
		return " (Gatekeeper: the constraint's spec.match.excludedNamespaces)"
	}
	return ""
}

// sccProblems shortens OpenShift's list of what each SCC refused to its
// distinct complaints.
func sccProblems(msg string) string {
	_, list, ok := strings.Cut(msg, "security context constraint: ")
	if !ok {
		return "see the API server's message"
	}
	list = strings.TrimSuffix(strings.TrimPrefix(list, "["), "]")
	var out []string
	for _, p := range strings.Split(list, ", ") {
		if strings.HasPrefix(p, "provider ") { // "provider \"anyuid\": Forbidden: not usable by user or serviceaccount"
			continue
		}
		if i := strings.LastIndex(p, ": "); i >= 0 && strings.Contains(p, "Invalid value") {
			p = p[i+2:]
		}
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return "no SCC usable by the pod's service account"
	}
	return strings.Join(out, "; ")
}

// serviceAccountOf is the service account a pod object runs as.
func serviceAccountOf(o Object) string {
	if p, ok := o.Obj.(*corev1.Pod); ok && p.Spec.ServiceAccountName != "" {
		return p.Spec.ServiceAccountName
	}
	return "default"
}

// oneLine collapses the white space of s (webhooks' messages span lines).
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
