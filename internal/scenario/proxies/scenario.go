// Package proxies is the proxy-hops scenario (issue 27, seed 000's
// sidecar latency): HTTP requests of the native engine (`cnibench run
// --test http --url`) to `cnibench serve --http-listen` in the server pod
// through 0, 1 or 2 L7 proxies — none; one proxy per node, on the client's
// node (where Cilium's per-node Envoy and Istio ambient's ztunnel/waypoint
// sit); a sidecar per pod, one in the client pod and one in the server pod
// (Istio's sidecar model) — with HAProxy and nginx as the proxies, HTTP
// keep-alive on and off (each proxy configured to match: connections
// reused on both sides, or one per request on both sides).
//
// The client addresses the first proxy directly: no iptables redirection
// (Istio's sidecars are reached by an iptables REDIRECT of the pod's
// traffic; here the URL names the sidecar), so the redirect's own cost is
// not in the figures. Envoy, which Cilium and Istio use, is in neither
// Debian's nor Go's registries: HAProxy and nginx stand in for it.
//
// Each proxy runs in a lab namespace (the client's node, the client pod,
// the server pod) as a child of the run with its configuration in a
// temporary directory (never /etc/haproxy or /etc/nginx, never the host's
// services), and is killed at the point's Close, on interrupt, and with the
// run (a parent-death signal). Every cell records each proxy's CPU over the
// cell, read from /proc/<pid>/stat and summed over its processes.
package proxies

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// ScenarioName is the scenario's name (--scenario, the scenario label).
const ScenarioName = "proxies"

// Labels of the scenario's results.
const (
	LabelProxy     = "proxy"     // none, haproxy, nginx
	LabelHops      = "hops"      // 0, 1, 2
	LabelKeepAlive = "keepalive" // on, off
)

// Proxies (the proxy label).
const (
	None    = "none"
	HAProxy = "haproxy"
	Nginx   = "nginx"
)

// Keep-alive settings (the keepalive label).
const (
	On  = "on"
	Off = "off"
)

// Proxies are the --proxies values, in order.
var Proxies = []string{HAProxy, Nginx}

// Hops are the --hops values: 0 (direct), 1 (a proxy on the client's
// node), 2 (a sidecar in each pod).
var Hops = []int{0, 1, 2}

// KeepAlives are the --proxy-keepalive values.
var KeepAlives = []string{On, Off}

// ConcurrentFlows is the flow count of the many-client cell.
const ConcurrentFlows = 16

// InstallHint is how a missing proxy is installed (Debian's packages).
const InstallHint = "apt-get install haproxy nginx"

// Options configure the scenario.
type Options struct {
	// Proxies are the proxies to run at 1 and 2 hops (HAProxy, nginx);
	// empty: both.
	Proxies []string
	// Hops are the hop counts (0, 1, 2); empty: all.
	Hops []int
	// KeepAlive are the keep-alive settings (on, off); empty: both.
	KeepAlive []string
	// Backend names where the points run (scenario.Common.Backend): on
	// any but the lab ("lab", or "" when unknown) every point is skipped
	// with scenario.ErrNeedsLab — the proxies run in the lab's namespaces.
	Backend string
}

// labBackend is the lab backend's name (lab.BackendName, which this
// OS-neutral file does not import).
const labBackend = "lab"

// Scenario is the proxy-hops scenario (scenario.Scenario).
type Scenario struct {
	o Options
	state
}

// New validates o. Errors name the flag and the fix.
func New(o Options) (*Scenario, error) {
	if len(o.Proxies) == 0 {
		o.Proxies = slices.Clone(Proxies)
	}
	if len(o.Hops) == 0 {
		o.Hops = slices.Clone(Hops)
	}
	if len(o.KeepAlive) == 0 {
		o.KeepAlive = slices.Clone(KeepAlives)
	}
	for _, p := range o.Proxies {
		if !slices.Contains(Proxies, p) {
			hint := ""
			if strings.EqualFold(p, "envoy") {
				hint = " (Envoy is in neither Debian's nor Go's registries)"
			}
			return nil, fmt.Errorf("--%s %q: must be among %s%s", flagProxies, p, strings.Join(Proxies, ", "), hint)
		}
	}
	for _, h := range o.Hops {
		if !slices.Contains(Hops, h) {
			return nil, fmt.Errorf("--%s %d: must be among 0 (direct), 1 (a proxy on the client's node), 2 (a sidecar in each pod)", flagHops, h)
		}
	}
	for _, k := range o.KeepAlive {
		if !slices.Contains(KeepAlives, k) {
			return nil, fmt.Errorf("--%s %q: must be on or off", flagKeepAlive, k)
		}
	}
	o.Proxies, o.Hops, o.KeepAlive = dedup(o.Proxies), dedup(o.Hops), dedup(o.KeepAlive)
	return &Scenario{o: o}, nil
}

func dedup[T comparable](s []T) []T {
	var out []T
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Name implements scenario.Scenario.
func (s *Scenario) Name() string { return ScenarioName }

// AnyDatapath: the proxies need the client and server pods and the client
// pod's node namespace, which every datapath with pods has
// (scenario.AnyDatapath).
func (s *Scenario) AnyDatapath() bool { return true }

// point is one set of parameters: a proxy, a hop count, keep-alive.
type point struct {
	proxy     string
	hops      int
	keepAlive bool
}

func (p point) labels() map[string]string {
	ka := Off
	if p.keepAlive {
		ka = On
	}
	return map[string]string{scenario.LabelScenario: ScenarioName, LabelProxy: p.proxy,
		LabelHops: strconv.Itoa(p.hops), LabelKeepAlive: ka}
}

// pointOf reads a point back from its labels.
func pointOf(sp scenario.Point) (point, error) {
	l := sp.Labels
	h, err := strconv.Atoi(l[LabelHops])
	if err != nil || !slices.Contains(Hops, h) {
		return point{}, fmt.Errorf("proxies: hops label %q is not 0, 1 or 2", l[LabelHops])
	}
	p := point{proxy: l[LabelProxy], hops: h, keepAlive: l[LabelKeepAlive] == On}
	switch {
	case l[LabelKeepAlive] != On && l[LabelKeepAlive] != Off:
		return point{}, fmt.Errorf("proxies: keepalive label %q is not on or off", l[LabelKeepAlive])
	case (h == 0) != (p.proxy == None):
		return point{}, fmt.Errorf("proxies: proxy %q at %d hops (0 hops has no proxy, 1 and 2 have one)", p.proxy, h)
	case p.proxy != None && !slices.Contains(Proxies, p.proxy):
		return point{}, fmt.Errorf("proxies: unknown proxy %q", p.proxy)
	}
	return p, nil
}

// points lists the selected points: 0 hops (no proxy) first, then each
// proxy at 1 and 2 hops, each with keep-alive on then off.
func (s *Scenario) points() []point {
	var out []point
	kas := func(f func(ka bool)) {
		for _, k := range s.o.KeepAlive {
			f(k == On)
		}
	}
	if slices.Contains(s.o.Hops, 0) {
		kas(func(ka bool) { out = append(out, point{proxy: None, hops: 0, keepAlive: ka}) })
	}
	for _, px := range s.o.Proxies {
		for _, h := range s.o.Hops {
			if h == 0 {
				continue
			}
			kas(func(ka bool) { out = append(out, point{proxy: px, hops: h, keepAlive: ka}) })
		}
	}
	return out
}

// Points implements scenario.Scenario; a proxy this machine lacks is
// skipped with the install command.
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	for _, p := range s.points() {
		skip := probe(p.proxy)
		if s.o.Backend != "" && s.o.Backend != labBackend {
			skip = fmt.Errorf("proxies: %w (a cluster's pods run the cnibench image, which holds no proxy)", scenario.ErrNeedsLab)
		}
		out = append(out, scenario.Point{Labels: p.labels(), Skip: skip})
	}
	return out
}

// Cells implements scenario.Celler: HTTP GETs at one client (latency, as
// seed 000's request/response) and at ConcurrentFlows clients (requests/s
// under concurrency), to the scenario's own target (Target).
func (s *Scenario) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{
		{Test: result.TestHTTP, Flows: 1},
		{Test: result.TestHTTP, Flows: ConcurrentFlows},
	}
}

// Config describes the scenario for the runs' config.
func (s *Scenario) Config() map[string]string {
	var ps []string
	for _, p := range s.points() {
		l := p.labels()
		ps = append(ps, l[LabelProxy]+"/"+l[LabelHops]+"/"+l[LabelKeepAlive])
	}
	return map[string]string{
		"proxies_points": strings.Join(ps, ","),
		"scenario_cells": fmt.Sprintf("per point: http ×1 and ×%d (cnibench run --test http --url, 1024-byte bodies, --http-keepalive when keepalive=on) against cnibench serve --http-listen in the server pod", ConcurrentFlows),
		"proxies_topology": "hops=0: client pod → server pod; hops=1: client pod → proxy on the client's node → server pod; " +
			"hops=2: client pod → sidecar on the client pod's loopback → sidecar on the server pod's address → server on the server pod's loopback. " +
			"The client addresses the first proxy directly (no iptables redirection). One proxy worker each (HAProxy nbthread 1, nginx worker_processes 1).",
		"proxies_envoy": "Envoy (Cilium's and Istio's proxy) is in neither Debian's nor Go's registries: not measured",
	}
}
