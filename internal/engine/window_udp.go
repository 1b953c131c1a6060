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
	udpOffSeq    = 8
	udpOffFlow   = 16
	udpOffPhase  = 18

	udpRRHeader     = 18
	udpStreamHeader = 19

	phaseWarmup   = 0
	phaseMeasured = 1
	phaseAfter    = 2
	// phaseHello marks udp_stream's handshake datagram (Config.UDPHandshake):
	// the server answers it with its own header and counts nothing.
	phaseHello = 3
)

// UDPHandshakeText describes Config.UDPHandshake in a result's config
// (udp_handshake).
const UDPHandshakeText = "one datagram each way before the stream (iperf3-style)"

// udpHello builds flow's handshake datagram (and, echoed, the server's
// reply): the udp_stream header with sequence 0 and phaseHello.
func udpHello(cookie uint64, flow int) []byte {
	b := make([]byte, udpStreamHeader)
	putUDPHeader(b, cookie, 0, flow)
	b[udpOffPhase] = phaseHello
	return b
}

// isUDPHello reports whether b is a handshake datagram (or its reply) of
// the session cookie and flow.
func isUDPHello(b []byte, cookie uint64, flow int) bool {
	c, _, f, ok := parseUDPHeader(b)
	return ok && len(b) >= udpStreamHeader && b[udpOffPhase] == phaseHello && c == cookie && f == flow
}

// IP and UDP header sizes, for the datagram size that fits the path MTU.
const (
	ipv4Header = 20
	ipv6Header = 40
	udpHeader  = 8
)

// putUDPHeader writes the common header (cookie, seq, flow) into b, which
// must be at least udpRRHeader bytes.
func putUDPHeader(b []byte, cookie, seq uint64, flow int) {
	binary.LittleEndian.PutUint64(b[udpOffCookie:], cookie)
	binary.LittleEndian.PutUint64(b[udpOffSeq:], seq)
	binary.BigEndian.PutUint16(b[udpOffFlow:], uint16(flow))
}

// parseUDPHeader reads the common header; ok is false when b is too short.
func parseUDPHeader(b []byte) (cookie, seq uint64, flow int, ok bool) {
	if len(b) < udpRRHeader {
		return 0, 0, 0, false
	}
	return binary.LittleEndian.Uint64(b[udpOffCookie:]), binary.LittleEndian.Uint64(b[udpOffSeq:]),
		int(binary.BigEndian.Uint16(b[udpOffFlow:])), true
}

// udpRRWireSize is the size of a udp_rr request on the wire: the requested
// size, but never less than the header carrying the cookie and sequence.
func udpRRWireSize(reqSize int) int { return max(reqSize, udpRRHeader) }

// udpPayloadFor is the largest UDP payload that crosses a path of the given
// MTU without IP fragmentation.
func udpPayloadFor(mtu int, v6 bool) int {
	hdr := ipv4Header
	if v6 {
		hdr = ipv6Header
	}
	return min(mtu-hdr-udpHeader, MaxUDPSize)
}

// fallbackMTU is assumed when the path MTU cannot be read.
const fallbackMTU = 1500

// udpDatagramSize decides udp_stream's datagram size: msgSize when given
// (0 = default), else the largest that fits the path MTU (0 = unknown).
// The warning says when the size fragments or the MTU was guessed.
func udpDatagramSize(msgSize, mtu int, v6 bool) (size int, source, warning string) {
	known := mtu > 0
	if !known {
		mtu = fallbackMTU
	}
	fit := udpPayloadFor(mtu, v6)
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

// seqWindow is how far behind the newest sequence number a late datagram
// is still told apart from a duplicate.
const seqWindow = 1024

// seqTracker counts one flow's measured datagrams from their sequence
// numbers, as iperf3 does: received, gaps (sequence numbers skipped and not
// filled later), duplicates and reordered (late) arrivals.
type seqTracker struct {
	started bool
	max     uint64
	// Recv counts every arrival; Bytes the bytes of unique ones.
	Recv, Bytes, Gaps, Dups, Reordered uint64
	seen                               [seqWindow / 64]uint64
}

func (t *seqTracker) bit(seq uint64) (word int, mask uint64) {
	i := seq % seqWindow
	return int(i / 64), 1 << (i % 64)
}

// add records one arrival of seq carrying n bytes.
func (t *seqTracker) add(seq uint64, n int) {
	t.Recv++
	switch {
	case !t.started:
		t.started, t.max = true, seq
	case seq > t.max:
		d := seq - t.max
		t.Gaps += d - 1
		if d >= seqWindow {
			t.seen = [seqWindow / 64]uint64{}
		} else {
			for s := t.max + 1; s < seq; s++ {
				w, m := t.bit(s)
				t.seen[w] &^= m
			}
		}
		t.max = seq
	case t.max-seq >= seqWindow:
		// Too late to tell from a duplicate: count it as reordered.
		t.Reordered++
		if t.Gaps > 0 {
			t.Gaps--
		}
		t.Bytes += uint64(n)
		return
	default:
		w, m := t.bit(seq)
		if t.seen[w]&m != 0 {
			t.Dups++
			return
		}
		if seq != t.max {
			t.Reordered++
			if t.Gaps > 0 {
				t.Gaps--
			}
		}
	}
	w, m := t.bit(seq)
	t.seen[w] |= m
	t.Bytes += uint64(n)
}

// Unique is the number of distinct datagrams received.
func (t *seqTracker) Unique() uint64 { return t.Recv - t.Dups }

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
