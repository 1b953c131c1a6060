// Package nodes chooses the nodes a cluster run's client and server pods
// go on: SelectPairs lists the nodes once (through kube.Call) and returns
// the pairs that fit the user's Choice and the Placement (zone policy:
// same-zone, cross-zone or any; OS and architecture; tolerated taints;
// control-plane nodes last), or says why none does (nodes.go). The
// placement's flags are parsed here (ParsePlacement, ParseTolerations),
// and a node's zone, InternalIP and facts for the run's labels are read
// here (placement.go).
package nodes
