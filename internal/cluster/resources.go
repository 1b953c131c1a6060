package cluster

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cnibench/cnibench/internal/kube"
)

// The pods' resources. By default (--pod-resources auto) every pod of the
// run is Guaranteed (requests equal limits): the kubelet then never
// evicts it first under pressure, and a node whose kubelet runs the
// static CPU manager gives it whole cores when its CPU is a whole number.
// A CPU limit also caps what the pod can use, and a benchmark that hits
// its limit measures the limit: so auto gives every pod the same share,
// as large as the busiest of the run's nodes allows (its allocatable CPU,
// less autoReserve for the node's own pods, divided among the run's pods
// on it), capped at autoMaxCPU, in steps of 100m; the results' config
// records it (pod_cpu, pod_memory, pod_qos). Every pod gets the same, so
// that the baseline's host pods and the pod network's pods differ in the
// network only.
const (
	autoMaxMilliCPU = 2000
	autoReserve     = 250 // millicores left to the node's other pods
	autoMinMilliCPU = 100
	// autoMemory holds the server's buffer budget (256 MiB by default,
	// server.DefaultLimits) and the Go runtime.
	autoMemory = "512Mi"
)

// ResourcesMode is how the pods' resources are chosen.
type ResourcesMode string

const (
	// ResourcesAuto: Guaranteed, sized to the nodes (the default).
	ResourcesAuto ResourcesMode = "auto"
	// ResourcesNone: BestEffort (no requests, no limits).
	ResourcesNone ResourcesMode = "none"
	// ResourcesGiven: Options.Resources as given.
	ResourcesGiven ResourcesMode = "given"
)

// resources returns every pod's requirements and a description for the
// results' config, given how many of the run's pods each node holds.
func (d *Deployment) resources(podsOn map[string]int) (corev1.ResourceRequirements, map[string]string, error) {
	o := d.b.o
	switch o.ResourcesMode {
	case ResourcesNone:
		return corev1.ResourceRequirements{}, map[string]string{"pod_qos": "BestEffort"}, nil
	case ResourcesGiven:
		return o.Resources, describeResources(o.Resources), nil
	}
	nodes := map[string]*corev1.Node{}
	for _, p := range d.pairs {
		nodes[p.Client.Name], nodes[p.Server.Name] = p.Client, p.Server
	}
	milli := int64(autoMaxMilliCPU)
	var tight []string
	names := make([]string, 0, len(podsOn))
	for n := range podsOn {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		n := nodes[name]
		if n == nil {
			continue
		}
		alloc := n.Status.Allocatable.Cpu().MilliValue()
		if alloc == 0 {
			// A node that reports no allocatable CPU (a fake, a virtual
			// node) does not limit the share.
			continue
		}
		share := (alloc - autoReserve) / int64(podsOn[name])
		share -= share % 100
		if share < milli {
			milli = share
		}
		tight = append(tight, fmt.Sprintf("%s: %dm allocatable, %d pods", name, alloc, podsOn[name]))
	}
	if milli < autoMinMilliCPU {
		return corev1.ResourceRequirements{}, nil, fmt.Errorf("--pod-resources auto: the nodes are too small for %dm CPU per pod (%s); pass --pod-resources none (BestEffort) or cpu=…,memory=…", autoMinMilliCPU, strings.Join(tight, "; "))
	}
	q := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(milli, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(autoMemory),
	}
	r := corev1.ResourceRequirements{Requests: q, Limits: q.DeepCopy()}
	return r, describeResources(r), nil
}

// describeResources is r for the results' config: pod_cpu and pod_memory
// (the limits, else the requests) and the QoS class they give.
func describeResources(r corev1.ResourceRequirements) map[string]string {
	out := map[string]string{"pod_qos": string(qosOf(r))}
	pick := func(name corev1.ResourceName) string {
		if q, ok := r.Limits[name]; ok {
			return q.String()
		}
		if q, ok := r.Requests[name]; ok {
			return q.String() + " (request)"
		}
		return "unlimited"
	}
	out["pod_cpu"] = pick(corev1.ResourceCPU)
	out["pod_memory"] = pick(corev1.ResourceMemory)
	return out
}

// qosOf is the QoS class of a pod whose one container has r.
func qosOf(r corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		l, ok := r.Limits[name]
		if !ok {
			return corev1.PodQOSBurstable
		}
		if q, ok := r.Requests[name]; ok && q.Cmp(l) != 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSGuaranteed
}

// ParseResources parses --pod-resources: auto (also ""), or what
// kube.ParseResources takes (none; cpu=Q,memory=Q, Guaranteed; the same
// with requests-only, Burstable).
func ParseResources(s string) (ResourcesMode, corev1.ResourceRequirements, error) {
	if t := strings.TrimSpace(s); t == "" || t == string(ResourcesAuto) {
		return ResourcesAuto, corev1.ResourceRequirements{}, nil
	}
	r, err := kube.ParseResources(s)
	if err != nil {
		return "", r, fmt.Errorf("%w (or auto)", err)
	}
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return ResourcesNone, r, nil
	}
	return ResourcesGiven, r, nil
}
