// Package preflight dry-runs the objects a run would create: Check creates
// each with a server-side dry run, so that the API server runs every
// admission plugin and webhook on it and persists nothing, and reports per
// object whether it was admitted and, if refused, what refused it (Pod
// Security admission and the checks violated, a webhook, a
// ValidatingAdmissionPolicy, OpenShift's SCCs, RBAC, a ResourceQuota) and
// a fix, in one line each (reasons.go); Report.String renders the report
// (report.go). WarningCollector keeps the API server's admission warnings
// and attaches them to the dry runs that drew them (warnings.go).
//
// It knows nothing of cnibench's own objects: the backends and scenarios
// build them (internal/kube, internal/cluster) and hand them over as
// Objects.
package preflight
