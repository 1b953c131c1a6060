// Package proof proves that an egress filter enforces, and measures when:
// UDP probes from the client pod to a denied and an allowed address of the
// server pod, a busy sender and a receiver that tells the destinations
// apart. MeasureEnforcement times an action that must make the denied
// address unreachable (a filter loaded, a CIDR added), MeasureRelease one
// that must make it reachable again (a CIDR removed); both fail with
// ErrNotEnforced or ErrNotReleased when the probes say otherwise. It knows
// nothing of filters: the action is a function, the pods two namespaces
// to run in (Linux only).
package proof
