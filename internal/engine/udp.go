package engine

import (
	"encoding/binary"
	"fmt"
)

// Datagram layouts. Every datagram the client sends starts with the
// session's cookie (the server drops datagrams without it), a sequence
// number and the flow's index (which steers it to the flow's own server
// socket):
//
//	udp_stream: cookie u64 LE | seq u64 LE | flow u16 BE | phase u8 | padding
//	udp_rr:     cookie u64 LE | seq u64 LE | flow u16 BE | padding
//
// The phase byte (warm-up, measured, after) lets the receiver count exactly
// the datagrams sent inside the measured window, with no clock agreement.
// udp_rr responses start with the request's sequence number (its first
// min(8, size) bytes), so late answers are told apart.
const (
	udpOffCookie = 0
	UDPOffSeq    = 8
	UDPOffFlow   = 16
	UDPOffPhase  = 18

	UDPRRHeader     = 18
	UDPStreamHeader = 19

	PhaseWarmup   = 0
	PhaseMeasured = 1
	PhaseAfter    = 2
	// phaseHello marks udp_stream's handshake datagram (Config.UDPHandshake):
	// the server answers it with its own header and counts nothing.
	phaseHello = 3
)

// UDPHandshakeText describes Config.UDPHandshake in a result's config
// (udp_handshake).
const UDPHandshakeText = "one datagram each way before the stream (iperf3-style)"

// UDPHello builds flow's handshake datagram (and, echoed, the server's
// reply): the udp_stream header with sequence 0 and phaseHello.
func UDPHello(cookie uint64, flow int) []byte {
	b := make([]byte, UDPStreamHeader)
	PutUDPHeader(b, cookie, 0, flow)
	b[UDPOffPhase] = phaseHello
	return b
}

// IsUDPHello reports whether b is a handshake datagram (or its reply) of
// the session cookie and flow.
func IsUDPHello(b []byte, cookie uint64, flow int) bool {
	c, _, f, ok := ParseUDPHeader(b)
	return ok && len(b) >= UDPStreamHeader && b[UDPOffPhase] == phaseHello && c == cookie && f == flow
}

// IP and UDP header sizes, for the datagram size that fits the path MTU.
const (
	ipv4Header = 20
	ipv6Header = 40
	udpHeader  = 8
)

// PutUDPHeader writes the common header (cookie, seq, flow) into b, which
// must be at least UDPRRHeader bytes.
func PutUDPHeader(b []byte, cookie, seq uint64, flow int) {
	binary.LittleEndian.PutUint64(b[udpOffCookie:], cookie)
	binary.LittleEndian.PutUint64(b[UDPOffSeq:], seq)
	binary.BigEndian.PutUint16(b[UDPOffFlow:], uint16(flow))
}

// ParseUDPHeader reads the common header; ok is false when b is too short.
func ParseUDPHeader(b []byte) (cookie, seq uint64, flow int, ok bool) {
	if len(b) < UDPRRHeader {
		return 0, 0, 0, false
	}
	return binary.LittleEndian.Uint64(b[udpOffCookie:]), binary.LittleEndian.Uint64(b[UDPOffSeq:]),
		int(binary.BigEndian.Uint16(b[UDPOffFlow:])), true
}

// UDPRRWireSize is the size of a udp_rr request on the wire: the requested
// size, but never less than the header carrying the cookie and sequence.
func UDPRRWireSize(reqSize int) int { return max(reqSize, UDPRRHeader) }

// UDPPayloadFor is the largest UDP payload that crosses a path of the given
// MTU without IP fragmentation.
func UDPPayloadFor(mtu int, v6 bool) int {
	hdr := ipv4Header
	if v6 {
		hdr = ipv6Header
	}
	return min(mtu-hdr-udpHeader, MaxUDPSize)
}

// fallbackMTU is assumed when the path MTU cannot be read.
const fallbackMTU = 1500

// UDPDatagramSize decides udp_stream's datagram size: msgSize when given
// (0 = default), else the largest that fits the path MTU (0 = unknown).
// The warning says when the size fragments or the MTU was guessed.
func UDPDatagramSize(msgSize, mtu int, v6 bool) (size int, source, warning string) {
	known := mtu > 0
	if !known {
		mtu = fallbackMTU
	}
	fit := UDPPayloadFor(mtu, v6)
	if msgSize == 0 {
		if !known {
			return fit, "default", fmt.Sprintf("the path MTU could not be read: %d-byte datagrams assume a %d-byte MTU and fragment on a smaller one", fit, fallbackMTU)
		}
		return fit, "path_mtu", ""
	}
	if msgSize > fit {
		frags := (msgSize + udpHeader + fit + udpHeader - 1) / (fit + udpHeader)
		return msgSize, "flag", fmt.Sprintf("--message-size %d exceeds the %d-byte UDP payload of the %d-byte path MTU: every datagram is cut into %d IP fragments, so the result measures fragmentation and reassembly", msgSize, fit, mtu, frags)
	}
	return msgSize, "flag", ""
}

// UDPRecv is the server's account of udp_stream's measured datagrams since
// the data plane was set up (so it does not depend on when the server saw
// `start`): counted per flow from the sequence numbers.
type UDPRecv struct {
	Received   uint64 `json:"received"` // unique measured datagrams
	Bytes      uint64 `json:"bytes"`    // their bytes (UDP payload)
	Gaps       uint64 `json:"gaps"`     // sequence numbers skipped and never filled
	Duplicates uint64 `json:"duplicates"`
	Reordered  uint64 `json:"reordered"`
	// Foreign counts datagrams dropped for a wrong cookie, source address
	// or flow index.
	Foreign uint64 `json:"foreign"`
	// Settled reports that the receive queues drained and the counters
	// stopped changing before the stats were taken; DrainMillis is how
	// long that took.
	Settled     bool  `json:"settled"`
	DrainMillis int64 `json:"drain_ms"`
}
