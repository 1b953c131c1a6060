// Package rbac renders the rights cnibench needs in a cluster (cnibench k8s
// rbac): the ServiceAccount, the cluster-wide and namespaced roles and
// their bindings, each rule with the reason it is needed, as objects (For)
// or as commented multi-document YAML for kubectl apply (YAMLFor). Full
// lets runs create and delete their namespaces; ExistingNamespace is the
// least-privilege mode for a namespace made beforehand. The ConfigMaps it
// grants reads of, and the namespaces where the CNI's pods are listed,
// are internal/kube/cni's.
package rbac
