package services

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// clusterDeployment is what the scenario needs of a Kubernetes deployment
// (the cluster backend's have it): the run's pods and API clients.
type clusterDeployment interface {
	ClusterAccess(datapath string) (*cluster.Access, error)
}

var _ clusterDeployment = (*cluster.Deployment)(nil)

// ScenarioName is the services scenario's name (--scenario, the scenario
// label).
const ScenarioName = "services"

// Labels of the scenario's results (besides scenario.LabelScenario and the
// cell's path).
const (
	LabelImplementation = "implementation"
	LabelServices       = "services"
)

// Implementations, in the order reports list them.
const (
	// ImplNone is the baseline: no service; the client takes the
	// backends' own addresses in turn (client-side balancing), the hairpin
	// client its own address.
	ImplNone     = "none"
	ImplIPTables = "iptables"       // kube-proxy's iptables mode (KUBE-SERVICES, DNAT, conntrack)
	ImplSocketLB = "ebpf-socket-lb" // cgroup connect/sendmsg/recvmsg/getpeername hooks
	ImplTCLB     = "ebpf-tc-lb"     // TCX DNAT + reverse NAT with BPF connection maps
)

// Implementations lists every implementation.
var Implementations = []string{ImplNone, ImplIPTables, ImplSocketLB, ImplTCLB}

// Paths of the scenario's cells (the path label).
const (
	// PathPodToService: the cross-node client pod (node 1) to the service,
	// whose backends are on both nodes.
	PathPodToService = "pod-to-service"
	// PathHairpin: a backend pod to a service whose only backend is that
	// pod itself (kube-proxy masquerades it; Cilium's socket LB connects
	// locally; the TC LB SNATs it to HairpinAddr and sends it back).
	PathHairpin = "hairpin"
)

// DefaultServices are the service counts without --services (issue 11).
var DefaultServices = []int{1, 100, 1000, 10000}

// MaxServices bounds --services: VIPs come from FillerVIPs (16 k addresses).
const MaxServices = 16000

// Ports every backend serves: service-mode tcp_rr/tcp_crr and HTTP.
const (
	RRPort   = 12871
	HTTPPort = 8080
)

// Service addresses: the measured service, the hairpin service, and the
// range the other N−1 services take their VIPs from (198.18.128.0/18, an
// RFC 2544 range no lab address uses).
var (
	MeasuredVIP = netip.MustParseAddr("198.18.128.1")
	HairpinVIP  = netip.MustParseAddr("198.18.128.2")
	FillerVIPs  = netip.MustParsePrefix("198.18.128.0/18")
)

// backend pods: two on each node; hairpinRole's pod is also the hairpin
// path's client and its service's only backend.
var backendPods = []backend.Pod{
	{Role: "svc1", Node: 0, IP: netip.MustParseAddr("198.19.1.21")},
	{Role: "svc2", Node: 0, IP: netip.MustParseAddr("198.19.1.22")},
	{Role: "svc3", Node: 1, IP: netip.MustParseAddr("198.19.2.21")},
	{Role: "svc4", Node: 1, IP: netip.MustParseAddr("198.19.2.22")},
}

const hairpinRole = "svc1"

// backendIPs are the backend pods' addresses; hairpinIP is the hairpin
// pod's.
func backendIPs() []netip.Addr {
	out := make([]netip.Addr, len(backendPods))
	for i, b := range backendPods {
		out[i] = b.IP
	}
	return out
}

var hairpinIP = backendPods[0].IP

// Cells: every point runs these on both paths. tcp_rr uses four
// connections so that a repeat spreads over backends on both nodes (one
// connection would land on one backend, same-node or cross-node, by
// chance); http has keep-alive off (a new connection per request, as
// `hey -disable-keepalive`).
const (
	RRFlows     = 4
	HTTPClients = 100
)

// Options configure the scenario.
type Options struct {
	// Implementations to run; empty: all.
	Implementations []string
	// Services are the service counts; empty: DefaultServices.
	Services []int
}

// Scenario is the services scenario (scenario.Scenario).
type Scenario struct {
	o Options
	state
	// backend is where the points run (SetBackend); cluster configures a
	// cluster's points.
	backend   string
	defaulted bool // no --implementations: the backend's defaults
	cluster   ClusterOptions
}

// New validates o and fills its defaults. Errors name the flag.
func New(o Options) (*Scenario, error) {
	defaulted := len(o.Implementations) == 0
	if defaulted {
		o.Implementations = slices.Clone(Implementations)
	}
	if len(o.Services) == 0 {
		o.Services = slices.Clone(DefaultServices)
	}
	for _, impl := range o.Implementations {
		if !slices.Contains(Implementations, impl) && impl != ImplCluster {
			return nil, fmt.Errorf("--implementations %q: must be among %s (on a cluster: %s)", impl, strings.Join(Implementations, ", "), ImplCluster)
		}
	}
	for _, n := range o.Services {
		if n < 1 || n > MaxServices {
			return nil, fmt.Errorf("--services %d: must be between 1 and %d", n, MaxServices)
		}
	}
	return &Scenario{o: o, defaulted: defaulted}, nil
}

// SetBackend says where the points run, before Points: on a cluster
// without --implementations, the cluster's own service implementation
// (kube-proxy or its CNI's replacement), bounded by co.MaxServices; on the
// lab, its implementations.
func (s *Scenario) SetBackend(name string, co ClusterOptions) {
	s.backend, s.cluster = name, co
	if name == cluster.Name && s.defaulted {
		s.o.Implementations = []string{ImplCluster}
	}
}

// pointSkip is why an implementation's points cannot run on this backend
// (nil if they can), and the bound of its service count.
func (s *Scenario) pointSkip(impl string, n int) error {
	switch {
	case impl == ImplCluster && s.backend != cluster.Name:
		return fmt.Errorf("%s is the cluster's own service implementation: %w", impl, scenario.ErrNeedsCluster)
	case impl == ImplCluster:
		return ClusterTooLarge(n, s.cluster)
	case s.backend == cluster.Name:
		return fmt.Errorf("%s programs the lab's nodes: %w", impl, scenario.ErrNeedsLab)
	}
	return probe(impl)
}

// Options returns the options with defaults filled.
func (s *Scenario) Options() Options { return s.o }

// Name implements scenario.Scenario.
func (s *Scenario) Name() string { return ScenarioName }

// Pods implements scenario.Needs: the backend pods.
func (s *Scenario) Pods() []backend.Pod { return slices.Clone(backendPods) }

// Points implements scenario.Scenario: implementation × service count;
// an implementation this machine cannot run is skipped with its reason.
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	for _, impl := range s.o.Implementations {
		for _, n := range s.o.Services {
			out = append(out, scenario.Point{
				Labels: map[string]string{scenario.LabelScenario: ScenarioName, LabelImplementation: impl, LabelServices: strconv.Itoa(n)},
				Skip:   s.pointSkip(impl, n),
			})
		}
	}
	return out
}

// Cells implements scenario.Celler: tcp_crr, tcp_rr and http on both paths
// (a cluster's point: ClusterCells).
func (s *Scenario) Cells(p scenario.Point) []scenario.Cell {
	if p.Labels[LabelImplementation] == ImplCluster {
		return ClusterCells()
	}
	var out []scenario.Cell
	for _, path := range []string{PathPodToService, PathHairpin} {
		out = append(out,
			scenario.Cell{Test: engine.TCPCRR, Flows: 1, Path: path},
			scenario.Cell{Test: engine.TCPRR, Flows: RRFlows, Path: path},
			scenario.Cell{Test: engine.HTTP, Flows: HTTPClients, Path: path},
		)
	}
	return out
}

// layout is the service table of a point: fillers first, then the
// hairpin service, the measured service last (kube-proxy scans
// KUBE-SERVICES linearly: the measured service pays for all the others,
// the worst case, and says so).
func layout(n int, backends []netip.Addr, hairpin netip.Addr) []Service {
	var out []Service
	vip := FillerVIPs.Addr().Next().Next() // .0 network, .1 measured, .2 hairpin
	for i := range n - 1 {
		vip = vip.Next()
		var eps []netip.AddrPort
		// Filler endpoints: addresses no pod has (never reached).
		for j := range 4 {
			eps = append(eps, netip.AddrPortFrom(fillerEndpoint(i, j), HTTPPort))
		}
		out = append(out, Service{Name: fmt.Sprintf("filler/svc%d:http", i), VIP: vip, Port: HTTPPort, Endpoints: eps})
	}
	ports := []struct {
		name string
		port uint16
	}{{"rr", RRPort}, {"http", HTTPPort}}
	for _, p := range ports {
		out = append(out, Service{Name: "cnibench/hairpin:" + p.name, VIP: HairpinVIP, Port: p.port,
			Endpoints: []netip.AddrPort{netip.AddrPortFrom(hairpin, p.port)}})
	}
	for _, p := range ports {
		var eps []netip.AddrPort
		for _, b := range backends {
			eps = append(eps, netip.AddrPortFrom(b, p.port))
		}
		out = append(out, Service{Name: "cnibench/measured:" + p.name, VIP: MeasuredVIP, Port: p.port, Endpoints: eps})
	}
	return out
}

// fillerEndpoint is the j-th endpoint of filler service i: 10.x.y.z
// addresses, routed nowhere in the lab.
func fillerEndpoint(i, j int) netip.Addr {
	k := uint32(i*4 + j + 1)
	return netip.AddrFrom4([4]byte{10, byte(k >> 16), byte(k >> 8), byte(k)})
}

// target is where a cell's client runs and what it dials: the VIP, or
// for ImplNone the backends' own addresses (taken in turn by the client's
// connections), the hairpin client's own.
func target(impl string, c scenario.Cell) (role string, args []string, err error) {
	dests, role := []netip.Addr{MeasuredVIP}, lab.RoleClient1
	if c.Path == PathHairpin {
		dests, role = []netip.Addr{HairpinVIP}, hairpinRole
	}
	if impl == ImplNone {
		dests = nil
		for _, b := range backendPods {
			if c.Path != PathHairpin || b.Role == hairpinRole {
				dests = append(dests, b.IP)
			}
		}
	}
	join := func(port uint16, format string) string {
		var out []string
		for _, d := range dests {
			out = append(out, fmt.Sprintf(format, netip.AddrPortFrom(d, port)))
		}
		return strings.Join(out, ",")
	}
	switch c.Test {
	case engine.TCPRR, engine.TCPCRR:
		return role, []string{"--service", join(RRPort, "%s")}, nil
	case engine.HTTP:
		return role, []string{"--url", join(HTTPPort, "http://%s/")}, nil
	}
	return "", nil, fmt.Errorf("services: no target for test %s", c.Test)
}

// Config describes the scenario for the runs' config.
func (s *Scenario) Config() map[string]string {
	ns := make([]string, len(s.o.Services))
	for i, n := range s.o.Services {
		ns[i] = strconv.Itoa(n)
	}
	var bs []string
	for _, b := range backendPods {
		bs = append(bs, fmt.Sprintf("%s@node%d", b.IP, b.Node+1))
	}
	return map[string]string{
		"implementations":    strings.Join(s.o.Implementations, ","),
		"services":           strings.Join(ns, ","),
		"service_vip":        MeasuredVIP.String(),
		"service_backends":   strings.Join(bs, ","),
		"hairpin_vip":        HairpinVIP.String() + " (only backend: " + backendPods[0].IP.String() + ", its client)",
		"service_layout":     "services=N: N−1 filler services (4 endpoints each, never reached), the hairpin service, the measured service last in kube-proxy's KUBE-SERVICES (the worst case of its linear scan)",
		"scenario_cells":     fmt.Sprintf("per point and path (pod-to-service from client1 on node 1; hairpin from svc1): tcp_crr ×1, tcp_rr ×%d, http ×%d clients keep-alive off", RRFlows, HTTPClients),
		"service_rr_port":    strconv.Itoa(RRPort),
		"service_http_port":  strconv.Itoa(HTTPPort),
		"pod_tcp_timestamps": "2 in client1 and the backends (no per-destination random offset: the socket LB's clients connect to backends, the others to the VIP, and one point's TIME_WAIT sockets must not refuse the next point's SYNs)",
	}
}
