// Package agent holds the probes the Kubernetes backend runs inside its
// pods (`cnibench k8s agent …`, internal/cli/k8sagent): the pods' image
// holds nothing but /cnibench, so every question the backend asks a pod or
// node (its links and routes, the CNI configuration in use, a pod's cgroup
// usage, whether a connection gets through, what crosses an interface) is
// answered by a function here whose result is one JSON document. Each
// result type carries a Schema field ("cnibench/agent/<kind>/v1") and is
// exported so that the backend can unmarshal it.
package agent

// The Schema values of the results; a change of a result's meaning bumps
// its version.
const (
	SchemaInspect = "cnibench/agent/inspect/v1"
	SchemaCNIConf = "cnibench/agent/cni-conf/v1"
	SchemaCgroup  = "cnibench/agent/cgroup/v1"
	SchemaConnect = "cnibench/agent/connect/v1"
	SchemaCapture = "cnibench/agent/capture/v1"
	SchemaNetstat = "cnibench/agent/netstat/v1"
)
