package capture

import (
	"fmt"
	"strconv"
	"strings"
)

// Defaults of Options.
const (
	// DefaultSnapLen bytes of each frame are captured and scanned: the
	// deepest headers the lab stacks (Ethernet, outer IPv6, UDP, VXLAN,
	// inner Ethernet, IPv6, TCP with 40 bytes of options: 184 bytes) plus
	// the engine.PayloadWindow+1 (167) bytes of payload that always hold a
	// whole marker, rounded up to 384.
	DefaultSnapLen = 384
	// DefaultRingSize is the size of the PACKET_RX_RING: 140,000 frames
	// of DefaultSnapLen bytes (480 with the kernel's header), a third of a
	// second of 5 Gbit/s of 1500-byte frames.
	DefaultRingSize = 64 << 20
	// DefaultBlockSize is the size of one TPACKET_V3 block.
	DefaultBlockSize = 1 << 20
	// DefaultMinEncFrames frames of an encryption protocol must have been
	// seen before the absence of the marker proves anything.
	DefaultMinEncFrames = 100
	// DefaultMinCoverage is the smallest share of the frames that crossed
	// the interface (its packet counters) and of the frames the kernel
	// offered the socket (PACKET_STATISTICS) that the capture must have
	// scanned for an encrypted verdict.
	DefaultMinCoverage = 0.99
)

// DefaultEncProtos are the keys (Result.ByProto) of the encryption
// protocols expected on the wire when Options.EncProtos is empty: IPsec
// ESP, ESP in UDP (NAT traversal) and WireGuard on its usual port.
func DefaultEncProtos() []string { return []string{"esp", "udp/4500", "udp/51820"} }

// tunnelPorts are UDP ports preferred when a frame's key keeps one port:
// VXLAN (IANA and Linux's default), Geneve, ESP in UDP, IKE, WireGuard.
func tunnelPorts() []uint16 { return []uint16{4789, 8472, 6081, 4500, 500, 51820} }

// Options tune a capture; the zero value is the defaults.
type Options struct {
	// SnapLen is how many bytes of each frame, from its Ethernet header,
	// are captured and scanned (0: DefaultSnapLen). The payload marker
	// recurs every engine.PayloadWindow+1 bytes, so scanning the whole
	// frame finds nothing more.
	SnapLen int
	// RingSize and BlockSize size the TPACKET_V3 receive ring (0: the
	// defaults). BlockSize must be a multiple of the page size.
	RingSize, BlockSize int
	// EncProtos are the ByProto keys of the encryption protocol expected
	// on the wire, e.g. "udp/51820" or "esp" (empty: DefaultEncProtos).
	EncProtos []string
	// MinEncFrames is how many frames of EncProtos an encrypted verdict
	// needs (0: DefaultMinEncFrames).
	MinEncFrames uint64
	// MinCoverage is the share of frames an encrypted verdict needs to have
	// been scanned (0: DefaultMinCoverage; at most 1).
	MinCoverage float64
	// Filter selects the frames counted apart in Result.Matched (the
	// zero Filter: none). Every frame is still counted and scanned.
	Filter Filter
}

// resolve fills the defaults and checks the values.
func (o Options) resolve() (Options, error) {
	if o.SnapLen == 0 {
		o.SnapLen = DefaultSnapLen
	}
	if o.RingSize == 0 {
		o.RingSize = DefaultRingSize
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if len(o.EncProtos) == 0 {
		o.EncProtos = DefaultEncProtos()
	}
	if o.MinEncFrames == 0 {
		o.MinEncFrames = DefaultMinEncFrames
	}
	if o.MinCoverage == 0 {
		o.MinCoverage = DefaultMinCoverage
	}
	switch {
	case o.SnapLen < ethHeader || o.SnapLen > 65535:
		return o, fmt.Errorf("snap length %d: must be between %d and 65535", o.SnapLen, ethHeader)
	case o.BlockSize <= 0 || o.BlockSize%4096 != 0:
		return o, fmt.Errorf("block size %d: must be a positive multiple of 4096", o.BlockSize)
	case o.BlockSize < o.SnapLen+256:
		return o, fmt.Errorf("block size %d: too small for a %d-byte snap length", o.BlockSize, o.SnapLen)
	case o.RingSize < 2*o.BlockSize:
		return o, fmt.Errorf("ring size %d: must hold at least two %d-byte blocks", o.RingSize, o.BlockSize)
	case o.MinCoverage < 0 || o.MinCoverage > 1:
		return o, fmt.Errorf("minimum coverage %g: must be between 0 and 1", o.MinCoverage)
	}
	return o, nil
}

// preferredPorts are the UDP ports a frame's key keeps by preference: the
// tunnels' and those of encProtos' "udp/N" keys.
func preferredPorts(encProtos []string) []uint16 {
	ports := tunnelPorts()
	for _, p := range encProtos {
		name, port, ok := strings.Cut(p, "/")
		if !ok || (name != "udp" && name != "udplite") {
			continue
		}
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && !hasPort(ports, uint16(n)) {
			ports = append(ports, uint16(n))
		}
	}
	return ports
}
