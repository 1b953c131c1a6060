package capture

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Errors of Result.Verdict, to be told apart with errors.Is.
var (
	// ErrCleartext: the payload marker crossed the wire in clear although
	// encryption was expected.
	ErrCleartext = errors.New("payload marker seen in clear")
	// ErrUnproven: the capture cannot prove what was asked (no traffic of
	// the encryption protocol, too many frames missed, or a negative
	// control that never saw the marker).
	ErrUnproven = errors.New("cannot prove")
)

// Result is what a capture saw on one interface.
type Result struct {
	Iface   string `json:"iface"`
	SnapLen int    `json:"snap_len"`
	// Frames were captured and scanned; Bytes is their length on the wire
	// (a GSO or GRO packet counts once, with its whole length).
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
	// In and Out split Frames by direction (Out: PACKET_OUTGOING).
	In  uint64 `json:"in"`
	Out uint64 `json:"out"`
	// RxGRO is set when the interface merges received packets with GRO
	// before the capture sees them; InSegs then counts each received frame
	// as the packets it was on the wire (estimated low: see IfaceCoverage),
	// else it equals In.
	RxGRO  bool   `json:"rx_gro"`
	InSegs uint64 `json:"in_segs"`
	// SocketPackets and Dropped are the kernel's PACKET_STATISTICS: frames
	// offered to the socket, and those of them the ring had no room for.
	SocketPackets uint64 `json:"socket_packets"`
	Dropped       uint64 `json:"dropped"`
	// IfaceRx and IfaceTx are the interface's packet counters over the
	// capture (IfaceErr says why they are missing).
	IfaceRx  uint64 `json:"iface_rx"`
	IfaceTx  uint64 `json:"iface_tx"`
	IfaceErr string `json:"iface_err,omitempty"`
	// MarkerFrames held a whole copy of one of the markers.
	MarkerFrames  uint64            `json:"marker_frames"`
	ByProto       map[string]uint64 `json:"by_proto"`
	MarkerByProto map[string]uint64 `json:"marker_by_proto,omitempty"`
	// Filter is Options.Filter ("" when none); Matched are the frames it
	// matched, MatchedMarker those of them with a marker, MatchedByProto
	// them by protocol (all zero without a filter).
	Filter         string            `json:"filter,omitempty"`
	Matched        uint64            `json:"matched,omitempty"`
	MatchedMarker  uint64            `json:"matched_marker,omitempty"`
	MatchedByProto map[string]uint64 `json:"matched_by_proto,omitempty"`
	Duration       time.Duration     `json:"duration_ns"`
	// ReaderCPU is the CPU time of the goroutine that scanned the ring
	// (the kernel's copying into the ring is not in it).
	ReaderCPU time.Duration `json:"reader_cpu_ns"`

	// What Verdict requires (from Options).
	EncProtos    []string `json:"enc_protos"`
	MinEncFrames uint64   `json:"min_enc_frames"`
	MinCoverage  float64  `json:"min_coverage"`
}

// IfaceCoverage is the share of the packets the interface counted in both
// directions that the capture scanned, or -1 when the counters are missing
// or zero: (InSegs+Out) / (IfaceRx+IfaceTx). Sent frames are counted as
// the interface does, after any GSO segmentation. Received ones are too,
// but when GRO merges them first (RxGRO, the lab's NIC-like wire) the
// capture sees one frame for several wire packets: InSegs then estimates
// them from the frame's length, its headers and the MTU, low when the
// sender's segments were smaller than the MTU allows (so the coverage errs
// low, never high), and not at all for protocols other than TCP and UDP.
func (r Result) IfaceCoverage() float64 {
	if r.IfaceErr != "" || r.IfaceRx+r.IfaceTx == 0 {
		return -1
	}
	return float64(r.InSegs+r.Out) / float64(r.IfaceRx+r.IfaceTx)
}

// SocketCoverage is the share of the frames the kernel offered the socket
// that reached the ring (1 when none were offered).
func (r Result) SocketCoverage() float64 {
	if r.Frames+r.Dropped == 0 {
		return 1
	}
	return float64(r.Frames) / float64(r.Frames+r.Dropped)
}

// Check reports whether the capture kept up: an error when it scanned less
// than MinCoverage of the frames offered to it (kernel drops) or of the
// frames the interface counted.
func (r Result) Check() error {
	if c := r.SocketCoverage(); c < r.MinCoverage {
		return fmt.Errorf("capture on %s did not keep up: the ring dropped %d of %d frames (scanned %.2f%%, need %.2f%%)",
			r.Iface, r.Dropped, r.Frames+r.Dropped, 100*c, 100*r.MinCoverage)
	}
	c := r.IfaceCoverage()
	if c < 0 {
		reason := r.IfaceErr
		if reason == "" {
			reason = "they did not move"
		}
		return fmt.Errorf("capture on %s: cannot compare with the interface's packet counters: %s", r.Iface, reason)
	}
	if c < r.MinCoverage {
		return fmt.Errorf("capture on %s scanned %d frames (%d sent, %d received, as %d wire packets) but the interface counted %d packets (%d sent, %d received): %.2f%%, need %.2f%%",
			r.Iface, r.Frames, r.Out, r.In, r.InSegs, r.IfaceRx+r.IfaceTx, r.IfaceTx, r.IfaceRx, 100*c, 100*r.MinCoverage)
	}
	return nil
}

// EncFrames is how many frames were of the encryption protocols.
func (r Result) EncFrames() uint64 {
	var n uint64
	for _, p := range r.EncProtos {
		n += r.ByProto[p]
	}
	return n
}

// Verdict turns the capture into the proof. With encrypted, the marker
// must never have been seen (else ErrCleartext), and at least MinEncFrames
// frames of EncProtos must have been seen by a capture that kept up
// (Check) (else ErrUnproven). Without, the negative control: the marker
// must have been seen in clear (else ErrUnproven).
func (r Result) Verdict(encrypted bool) error {
	if !encrypted {
		if r.MarkerFrames > 0 {
			return nil
		}
		if r.Frames == 0 {
			return fmt.Errorf("%w: negative control: no traffic captured on %s", ErrUnproven, r.Iface)
		}
		return fmt.Errorf("%w: negative control: the payload marker is in none of the %d frames captured on %s without encryption (%s)",
			ErrUnproven, r.Frames, r.Iface, FormatCounts(r.ByProto))
	}
	if r.MarkerFrames > 0 {
		return fmt.Errorf("%w: %d of %d frames on %s carried it (%s): the traffic is not (all) encrypted",
			ErrCleartext, r.MarkerFrames, r.Frames, r.Iface, FormatCounts(r.MarkerByProto))
	}
	if n := r.EncFrames(); n < r.MinEncFrames {
		return fmt.Errorf("%w: no traffic captured: %d frames of %s on %s (need %d) among %d (%s)",
			ErrUnproven, n, strings.Join(r.EncProtos, ", "), r.Iface, r.MinEncFrames, r.Frames, FormatCounts(r.ByProto))
	}
	if err := r.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnproven, err)
	}
	return nil
}

// FormatCounts lists counts by key, largest first: "udp/51820 1200, arp 2".
func FormatCounts(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}
