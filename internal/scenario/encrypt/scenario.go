// Package encrypt is the encryption scenario (issue 12, seeds 000 and
// 002): the lab's node-to-node pod traffic in the clear, through
// WireGuard and through IPsec (ESP in tunnel mode), with each mode's
// overhead taken off the pods' MTU — and once with the MTU left at the
// wire's, the misconfiguration seed 002 warns about. What the kernel
// lacks is recorded "skipped: <reason>" (kernel WireGuard and ESP on this
// machine); the userspace implementations are labelled as such
// (wireguard-userspace, ipsec-userspace) because their costs differ.
//
// Every cell of an encrypted point carries its proof: a capture on node
// 2's wire (AF_PACKET, in the node's namespace, the receiving side) saw the tunnel's packets
// and never the engine's payload marker; the `none` point is the negative
// control (the marker is seen in clear). A cell whose proof fails is
// recorded "proof failed", never as encrypted.
package encrypt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ScenarioName is the scenario's name (--scenario, the scenario label).
const ScenarioName = "encryption"

// Labels of the scenario's results.
const (
	LabelEncryption = "encryption" // none, wireguard, wireguard-userspace, ipsec, ipsec-userspace
	LabelCipher     = "cipher"     // chacha20poly1305, aes-gcm-128, aes-cbc-hmac-sha256
	LabelPodMTU     = "pod_mtu"    // lowered (wire MTU − overhead) or wire (not lowered)
	LabelRate       = "rate"       // the fixed-rate tcp_stream cell
)

// Encryption modes (the encryption label).
const (
	None               = "none"
	WireGuard          = "wireguard"
	WireGuardUserspace = "wireguard-userspace"
	IPsec              = "ipsec"
	IPsecUserspace     = "ipsec-userspace"
)

// Ciphers.
const (
	CipherChaCha = "chacha20poly1305"
	CipherGCM    = "aes-gcm-128"
	CipherCBC    = "aes-cbc-hmac-sha256"
)

// Pod MTU settings.
const (
	MTULowered = "lowered"
	MTUWire    = "wire"
)

// Families are the --encrypt values: each brings its kernel and userspace
// implementations.
var Families = []string{WireGuard, IPsec}

// FixedRate is the offered load of the fixed-rate cell: CPU at a fixed
// rate, which one userspace tunnel on two shared cores can carry.
const FixedRate = "500M"

// StreamFlows is the many-flow tcp_stream cell's flow count.
const StreamFlows = 8

// Options configure the scenario.
type Options struct {
	// Families are the encryption families to run (WireGuard, IPsec);
	// empty: both. The none point always runs (baseline and negative
	// control of the wire proof).
	Families []string
}

// Scenario is the encryption scenario (scenario.Scenario).
type Scenario struct {
	o Options
	state
}

// New validates o. Errors name the flag.
func New(o Options) (*Scenario, error) {
	if len(o.Families) == 0 {
		o.Families = slices.Clone(Families)
	}
	for _, f := range o.Families {
		if f == None {
			continue
		}
		if !slices.Contains(Families, f) {
			return nil, fmt.Errorf("--encrypt %q: must be among none, %s", f, strings.Join(Families, ", "))
		}
	}
	return &Scenario{o: o}, nil
}

// Name implements scenario.Scenario.
func (s *Scenario) Name() string { return ScenarioName }

// point is one mode: an implementation, a cipher and a pod MTU setting.
type point struct {
	enc, cipher, mtu string
}

func (p point) labels() map[string]string {
	return map[string]string{scenario.LabelScenario: ScenarioName, LabelEncryption: p.enc, LabelCipher: p.cipher, LabelPodMTU: p.mtu}
}

func pointOf(p scenario.Point) point {
	return point{enc: p.Labels[LabelEncryption], cipher: p.Labels[LabelCipher], mtu: p.Labels[LabelPodMTU]}
}

// points lists the modes of the selected families: the kernel and the
// userspace implementation of each, every cipher with the MTU lowered,
// and one run with the MTU left at the wire's.
func (s *Scenario) points() []point {
	out := []point{{enc: None, cipher: None, mtu: MTUWire}}
	for _, f := range s.o.Families {
		switch f {
		case WireGuard:
			out = append(out,
				point{WireGuard, CipherChaCha, MTULowered},
				point{WireGuardUserspace, CipherChaCha, MTULowered},
				point{WireGuardUserspace, CipherChaCha, MTUWire})
		case IPsec:
			out = append(out,
				point{IPsec, CipherGCM, MTULowered},
				point{IPsec, CipherCBC, MTULowered},
				point{IPsecUserspace, CipherGCM, MTULowered},
				point{IPsecUserspace, CipherCBC, MTULowered},
				point{IPsecUserspace, CipherGCM, MTUWire})
		}
	}
	return out
}

// Points implements scenario.Scenario; an implementation this machine
// lacks is skipped with its reason.
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	for _, p := range s.points() {
		out = append(out, scenario.Point{Labels: p.labels(), Skip: probe(p)})
	}
	return out
}

// Cells implements scenario.Celler (cross-node): tcp_stream at 1 and
// StreamFlows flows (maximum throughput), at FixedRate (CPU at a fixed
// load), tcp_rr (latency) and tcp_crr.
func (s *Scenario) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{
		{Test: engine.TCPStream, Flows: 1},
		{Test: engine.TCPStream, Flows: StreamFlows},
		{Test: engine.TCPStream, Flows: 1, Rate: FixedRate, Labels: map[string]string{LabelRate: FixedRate}},
		{Test: engine.TCPRR, Flows: 1},
		{Test: engine.TCPCRR, Flows: 1},
	}
}

// Config describes the scenario for the runs' config.
func (s *Scenario) Config() map[string]string {
	var ps []string
	for _, p := range s.points() {
		ps = append(ps, strings.Trim(p.enc+"/"+p.cipher+"/"+p.mtu, "/"))
	}
	return map[string]string{
		"encryption_points": strings.Join(ps, ","),
		"scenario_cells":    fmt.Sprintf("per point, cross-node: tcp_stream ×1, tcp_stream ×%d, tcp_stream ×1 --rate %s (label rate), tcp_rr ×1, tcp_crr ×1", StreamFlows, FixedRate),
		"encryption_proof":  "AF_PACKET capture on node 2's wire during every cell: encrypted points must show the tunnel's packets and never the engine's payload marker; none must show the marker (negative control)",
	}
}
