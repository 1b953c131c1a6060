package capture

import (
	"encoding/binary"
	"strconv"
)

// Frame is what ParseFrame reads from the headers of an Ethernet frame:
// enough to name the protocol that carries it across the wire.
type Frame struct {
	// EtherType after any VLAN tags (0 when the frame is too short).
	EtherType uint16
	// IPVersion is 4 or 6 for an IP packet whose header is complete, else 0.
	IPVersion uint8
	// Proto is the IP protocol (IPv4) or the first next header after the
	// IPv6 extension headers (hop-by-hop, routing, fragment, destination
	// options); ESP and AH end the chain.
	Proto uint8
	// Fragment is set for a non-first IP fragment (no transport header).
	Fragment bool
	// HasPorts is set when the TCP, UDP, UDP-Lite or SCTP ports were read.
	HasPorts         bool
	SrcPort, DstPort uint16
	// L3 is the offset of the IP header; Payload that of the TCP or UDP
	// payload, when the header up to it was read (else 0; it may be
	// len(b)).
	L3, Payload int
}

// Ether types and IP protocols the parser and the keys know.
const (
	etherIPv4  = 0x0800
	etherARP   = 0x0806
	etherIPv6  = 0x86dd
	etherVLAN  = 0x8100
	etherQinQ  = 0x88a8
	etherVLAN2 = 0x9100

	protoICMP    = 1
	protoIGMP    = 2
	protoIPIP    = 4
	protoTCP     = 6
	protoUDP     = 17
	protoIPv6    = 41
	protoGRE     = 47
	protoESP     = 50
	protoAH      = 51
	protoICMPv6  = 58
	protoSCTP    = 132
	protoUDPLite = 136

	ip6HopByHop = 0
	ip6Routing  = 43
	ip6Fragment = 44
	ip6DestOpts = 60
)

const (
	ethHeader  = 14
	maxVLANs   = 2
	maxIP6Exts = 8
)

// ParseFrame reads the headers of an Ethernet frame, which may be cut short
// (a capture's snap length): whatever is missing is left zero. It never
// reads past b.
func ParseFrame(b []byte) Frame {
	var f Frame
	if len(b) < ethHeader {
		return f
	}
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	for i := 0; i < maxVLANs && (et == etherVLAN || et == etherQinQ || et == etherVLAN2); i++ {
		off += 4
		if len(b) < off+2 {
			return f
		}
		et = binary.BigEndian.Uint16(b[off:])
	}
	f.EtherType = et
	off += 2
	switch et {
	case etherIPv4:
		parseIPv4(&f, b, off)
	case etherIPv6:
		parseIPv6(&f, b, off)
	}
	return f
}

func parseIPv4(f *Frame, b []byte, off int) {
	if len(b) < off+20 || b[off]>>4 != 4 {
		return
	}
	ihl := int(b[off]&0x0f) * 4
	if ihl < 20 || len(b) < off+ihl {
		return
	}
	f.IPVersion, f.L3 = 4, off
	f.Proto = b[off+9]
	if binary.BigEndian.Uint16(b[off+6:])&0x1fff != 0 {
		f.Fragment = true
		return
	}
	parsePorts(f, b, off+ihl)
}

func parseIPv6(f *Frame, b []byte, off int) {
	if len(b) < off+40 || b[off]>>4 != 6 {
		return
	}
	f.IPVersion, f.L3 = 6, off
	next := b[off+6]
	off += 40
	for i := 0; i < maxIP6Exts; i++ {
		switch next {
		case ip6HopByHop, ip6Routing, ip6DestOpts:
			if len(b) < off+2 {
				f.Proto = next
				return
			}
			next, off = b[off], off+(int(b[off+1])+1)*8
			continue
		case ip6Fragment:
			if len(b) < off+8 {
				f.Proto = next
				return
			}
			if binary.BigEndian.Uint16(b[off+2:])>>3 != 0 {
				f.Proto = b[off]
				f.Fragment = true
				return
			}
			next, off = b[off], off+8
			continue
		}
		break
	}
	f.Proto = next
	parsePorts(f, b, off)
}

func parsePorts(f *Frame, b []byte, off int) {
	switch f.Proto {
	case protoTCP, protoUDP, protoUDPLite, protoSCTP:
	default:
		return
	}
	if off < 0 || len(b) < off+4 {
		return
	}
	f.HasPorts = true
	f.SrcPort = binary.BigEndian.Uint16(b[off:])
	f.DstPort = binary.BigEndian.Uint16(b[off+2:])
	switch f.Proto {
	case protoUDP, protoUDPLite:
		if len(b) >= off+8 {
			f.Payload = off + 8
		}
	case protoTCP:
		if len(b) >= off+13 {
			if doff := int(b[off+12]>>4) * 4; doff >= 20 && len(b) >= off+doff {
				f.Payload = off + doff
			}
		}
	}
}

// protoName names an IP protocol in ByProto's keys ("" for unnamed ones).
func protoName(p uint8) string {
	switch p {
	case protoICMP:
		return "icmp"
	case protoIGMP:
		return "igmp"
	case protoIPIP:
		return "ipip"
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoIPv6:
		return "ipv6"
	case protoGRE:
		return "gre"
	case protoESP:
		return "esp"
	case protoAH:
		return "ah"
	case protoICMPv6:
		return "icmpv6"
	case protoSCTP:
		return "sctp"
	case protoUDPLite:
		return "udplite"
	}
	return ""
}

// Key names the frame's protocol as Result.ByProto does, with the
// default encryption protocols' ports preferred when choosing a UDP port
// (see key).
func (f Frame) Key() string { return f.key(preferredPorts(nil)).String() }

// protoKey is a comparable ByProto key, turned into a string only when the
// capture stops, so that counting a frame allocates nothing.
type protoKey struct {
	etherType uint16
	proto     uint8
	ip        bool
	frag      bool
	hasPort   bool
	port      uint16
}

// key picks the frame's key. UDP and UDP-Lite keep one port: the
// destination port if it is in prefer, else the source port if it is, else
// the lower of the two (a server's port is usually the lower one). TCP
// and SCTP keep none.
func (f Frame) key(prefer []uint16) protoKey {
	k := protoKey{etherType: f.EtherType, ip: f.IPVersion != 0, proto: f.Proto, frag: f.Fragment}
	if !k.ip || !f.HasPorts || (f.Proto != protoUDP && f.Proto != protoUDPLite) {
		return k
	}
	k.hasPort = true
	switch {
	case hasPort(prefer, f.DstPort):
		k.port = f.DstPort
	case hasPort(prefer, f.SrcPort):
		k.port = f.SrcPort
	default:
		k.port = min(f.SrcPort, f.DstPort)
	}
	return k
}

func hasPort(ports []uint16, p uint16) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// String is the key's name: "tcp", "udp/4789", "esp", "udp/frag", "arp",
// "eth/0x88cc", "ip/253", ...
func (k protoKey) String() string {
	if !k.ip {
		switch k.etherType {
		case etherARP:
			return "arp"
		case etherIPv4:
			return "ipv4/short"
		case etherIPv6:
			return "ipv6/short"
		case 0:
			return "short"
		}
		return "eth/0x" + strconv.FormatUint(uint64(k.etherType)|0x10000, 16)[1:]
	}
	name := protoName(k.proto)
	if name == "" {
		name = "ip/" + strconv.Itoa(int(k.proto))
	}
	switch {
	case k.frag:
		return name + "/frag"
	case k.hasPort:
		return name + "/" + strconv.Itoa(int(k.port))
	}
	return name
}
