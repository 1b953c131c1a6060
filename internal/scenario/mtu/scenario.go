// Package mtu is the MTU-misconfiguration scenario (seed 002, issue 25):
// on a jumbo wire, the pods' MTU set right (the wire's less the
// datapath's encapsulation), left at Ethernet's 1500, at a VXLAN CNI's
// default 1450, or too large for the path, the last once with ICMP
// "fragmentation needed" delivered (path-MTU discovery rescues it) and
// once dropped by a rule on the nodes (a PMTU black hole). Every cell
// records the path MTU the client detected, the one its kernel holds
// after the cell, the ICMP the nodes generated and the client received,
// retransmissions and the bytes that reached the server; a black-holed
// client is cut after its window and a bounded timeout and recorded as
// stalled, never left hanging.
package mtu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ScenarioName is the scenario's name (--scenario mtu).
const ScenarioName = "mtu"

// Labels of every result of the scenario.
const (
	LabelPodMTU = "pod_mtu"          // correct, 1500, 1450, too-large
	LabelICMP   = "icmp_frag_needed" // pass, drop
)

// Pod MTU settings (the pod_mtu label).
const (
	MTUCorrect  = "correct"   // wire MTU less the datapath's encapsulation overhead
	MTU1500     = "1500"      // jumbo wire not detected: Ethernet's default
	MTU1450     = "1450"      // jumbo wire not detected: a VXLAN CNI's default
	MTUTooLarge = "too-large" // correct + TooLargeBy: above the path MTU
)

// Settings are the --pod-mtus values, in the points' order.
var Settings = []string{MTUCorrect, MTU1500, MTU1450, MTUTooLarge}

// ICMP "fragmentation needed" on the nodes (the icmp_frag_needed label).
const (
	ICMPPass = "pass"
	ICMPDrop = "drop"
)

// TooLargeBy is how far the too-large setting exceeds the correct MTU: a
// VXLAN header's worth (lab.VXLANOverhead), so that on vxlan the pods get
// the wire's MTU (the jumbo wire detected, the encapsulation not
// subtracted) and on veth-routing 50 bytes above the wire.
const TooLargeBy = 50

// MinWireMTU is the smallest wire MTU the scenario runs on: its settings
// mean something only on a jumbo wire (1500 and 1450 must under-use it).
const MinWireMTU = 3000

// StallTimeout bounds a cell beyond its warm-up and window: a client
// whose connection is black-holed is stopped then and its cell recorded
// as stalled.
const StallTimeout = 20 * time.Second

// Metrics of every cell (the scenario's proof and what happened).
const (
	// MetricPodMTU: the MTU read back from the pods' interfaces.
	MetricPodMTU = "mtu_pod_bytes"
	// MetricDetected: the path MTU the client detected when it connected
	// (the engine's IP_MTU on its control socket, config path_mtu): the
	// lab's path-MTU check.
	MetricDetected = "mtu_path_detected_bytes"
	// MetricDetectedOff: MetricDetected less the correct MTU (negative:
	// the wire under-used; positive: above the path MTU; 0: right).
	MetricDetectedOff = "mtu_path_detected_error_bytes"
	// MetricPMTU: the client's path MTU towards the server after the cell
	// (a learnt PMTU exception, `ip route get`'s "cache mtu", else the
	// pod interface's MTU).
	MetricPMTU = "mtu_pmtu_after_bytes"
	// MetricPMTULearnt: 1 if the client's kernel held a PMTU exception
	// towards the server after the cell.
	MetricPMTULearnt = "mtu_pmtu_learnt"
	// MetricFragNeeded: ICMP "fragmentation needed" the nodes generated
	// or forwarded during the cell (counted by the scenario's nft rule,
	// dropped there with icmp_frag_needed=drop).
	MetricFragNeeded = "mtu_icmp_frag_needed_packets"
	// MetricUnreachRcvd: ICMP destination-unreachable messages the client
	// pod received (Icmp:InDestUnreachs).
	MetricUnreachRcvd = "mtu_client_icmp_unreach_received"
	// MetricRetransSegs: TCP segments the client pod retransmitted
	// (Tcp:RetransSegs; every test, tcp_crr included).
	MetricRetransSegs = "mtu_client_retrans_segments"
	// MetricServerBytes: bytes the server pod's interface received during
	// the cell (warm-up and window): what got through, also when the
	// client stalled.
	MetricServerBytes = "mtu_server_rx_bytes"
)

// StalledPrefix starts the error of a repeat whose client gave no result
// within its warm-up, window and StallTimeout (it was stopped) or failed:
// the repeat is recorded failed, with the cell's counters (bytes that
// reached the server, retransmissions, ICMP, PMTU) kept.
const StalledPrefix = "stalled: "

// Options configure the scenario.
type Options struct {
	// Settings are the pod MTU settings to run (Settings); empty: all.
	// too-large runs twice (ICMP passed and dropped).
	Settings []string
}

// Scenario is the MTU-misconfiguration scenario (scenario.Scenario).
type Scenario struct {
	o Options
	state
}

// New validates o; errors name the flag.
func New(o Options) (*Scenario, error) {
	if len(o.Settings) == 0 {
		o.Settings = slices.Clone(Settings)
	}
	seen := map[string]bool{}
	for _, s := range o.Settings {
		if !slices.Contains(Settings, s) {
			return nil, fmt.Errorf("--pod-mtus %q: must be among %s", s, strings.Join(Settings, ", "))
		}
		if seen[s] {
			return nil, fmt.Errorf("--pod-mtus: %s given twice", s)
		}
		seen[s] = true
	}
	return &Scenario{o: o}, nil
}

// Name implements scenario.Scenario.
func (s *Scenario) Name() string { return ScenarioName }

// AnyDatapath implements scenario.AnyDatapath: the scenario needs only
// the cross-node pods and the two nodes, which vxlan has too.
func (s *Scenario) AnyDatapath() bool { return true }

// point is one setting with ICMP passed or dropped.
type point struct{ setting, icmp string }

func (p point) labels() map[string]string {
	return map[string]string{scenario.LabelScenario: ScenarioName, LabelPodMTU: p.setting, LabelICMP: p.icmp}
}

func pointOf(p scenario.Point) point {
	return point{setting: p.Labels[LabelPodMTU], icmp: p.Labels[LabelICMP]}
}

// points lists the selected settings in Settings' order, too-large once
// with ICMP passed and once dropped.
func (s *Scenario) points() []point {
	var out []point
	for _, st := range Settings {
		if !slices.Contains(s.o.Settings, st) {
			continue
		}
		out = append(out, point{st, ICMPPass})
		if st == MTUTooLarge {
			out = append(out, point{st, ICMPDrop})
		}
	}
	return out
}

// Points implements scenario.Scenario. On another backend than the lab
// Prepare skips them (scenario.ErrNeedsLab).
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	for _, p := range s.points() {
		out = append(out, scenario.Point{Labels: p.labels()})
	}
	return out
}

// Cells implements scenario.Celler: cross-node tcp_stream, tcp_rr and
// tcp_crr at one flow.
func (s *Scenario) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{
		{Test: engine.TCPStream, Flows: 1},
		{Test: engine.TCPRR, Flows: 1},
		{Test: engine.TCPCRR, Flows: 1},
	}
}

// podMTUFor is the pods' MTU of a setting on a datapath whose correct
// pod MTU is correct.
func podMTUFor(setting string, correct int) (int, error) {
	switch setting {
	case MTUCorrect:
		return correct, nil
	case MTU1500:
		return 1500, nil
	case MTU1450:
		return 1450, nil
	case MTUTooLarge:
		return correct + TooLargeBy, nil
	}
	return 0, fmt.Errorf("mtu: unknown pod MTU setting %q", setting)
}

// Config describes the scenario for the runs' config.
func (s *Scenario) Config() map[string]string {
	var ps []string
	for _, p := range s.points() {
		ps = append(ps, p.setting+"/"+p.icmp)
	}
	return map[string]string{
		"mtu_points": strings.Join(ps, ","),
		"scenario_cells": fmt.Sprintf("per point, cross-node: tcp_stream ×1, tcp_rr ×1, tcp_crr ×1; each cell bounded by its warm-up, window and %s (then recorded stalled)",
			StallTimeout),
		"mtu_settings":  fmt.Sprintf("correct: wire less the datapath's encapsulation; 1500, 1450: fixed; too-large: correct + %d; pods' interfaces and their node-side veths set, node devices (bridge, VXLAN, wire) left as the datapath built them", TooLargeBy),
		"mtu_icmp_drop": "an nft rule on both nodes (output and forward) drops ICMP type 3 code 4; with pass the same rule only counts",
	}
}

// detectedMetrics turns the engine's path_mtu (config) into metrics: the
// detected path MTU and its error against the correct MTU.
func detectedMetrics(cfg map[string]string, correct int) map[string]float64 {
	v, err := strconv.Atoi(cfg["path_mtu"])
	if err != nil || v <= 0 {
		return nil
	}
	return map[string]float64{MetricDetected: float64(v), MetricDetectedOff: float64(v - correct)}
}
