package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/capture"
	"github.com/cnibench/cnibench/internal/engine"
)

// Capture is what crossed one interface during a capture (`agent
// capture`): how many frames, how many carried the engine's payload
// marker in clear (engine.PayloadMarker), by protocol.
type Capture struct {
	Schema     string `json:"schema"`
	Iface      string `json:"iface"`
	DurationNS int64  `json:"duration_ns"`
	// Interrupted is set when a signal ended the capture before its
	// duration.
	Interrupted bool `json:"interrupted,omitempty"`
	// Frames were scanned (In received, Out sent); MarkerFrames held a
	// whole copy of the marker.
	Frames       uint64 `json:"frames"`
	In           uint64 `json:"in"`
	Out          uint64 `json:"out"`
	MarkerFrames uint64 `json:"marker_frames"`
	// ByProtocol counts the frames by protocol key ("tcp", "udp/4789",
	// "udp/51820", "esp", "arp", ...: capture.ParseFrame's),
	// MarkerByProtocol those with the marker.
	ByProtocol       map[string]uint64 `json:"by_protocol"`
	MarkerByProtocol map[string]uint64 `json:"marker_by_protocol,omitempty"`
	// Filter names the address pairs of --between ("" when none:
	// every frame is the traffic looked for); MatchedFrames are the
	// frames between one of them (outermost IP header), MatchedMarker
	// those with the marker, MatchedByProtocol them by protocol.
	Filter              string            `json:"filter,omitempty"`
	MatchedFrames       uint64            `json:"matched_frames,omitempty"`
	MatchedMarkerFrames uint64            `json:"matched_marker_frames,omitempty"`
	MatchedByProtocol   map[string]uint64 `json:"matched_by_protocol,omitempty"`
	// KernelPackets and KernelDrops are the kernel's PACKET_STATISTICS:
	// frames offered to the capture and those it had no room for.
	KernelPackets uint64 `json:"kernel_packets"`
	KernelDrops   uint64 `json:"kernel_drops"`
	// ScannedFraction is the share of the frames offered that were
	// scanned (capture.Result.SocketCoverage); IfaceCoverage the share
	// of the interface's own packet count (-1: unknown).
	ScannedFraction float64 `json:"scanned_fraction"`
	IfaceCoverage   float64 `json:"iface_coverage"`
	// CheckError says why the capture did not keep up
	// (capture.Result.Check), Error why it failed.
	CheckError string `json:"check_error,omitempty"`
	Error      string `json:"error,omitempty"`
}

// CaptureOptions tune RunCapture.
type CaptureOptions struct {
	// Do runs a function in the interface's network namespace (nil: the
	// caller's); see capture.Start.
	Do func(func() error) error
	// Capture are the capture's options (zero: its defaults).
	Capture capture.Options
}

// RunCapture captures on iface for d, or until ctx ends, and counts the
// frames that carry engine.PayloadMarker. ready is called once the
// capture runs. The error (also in the report's Error) is the capture's;
// what was counted is returned with it.
func RunCapture(ctx context.Context, iface string, d time.Duration, o CaptureOptions, ready func()) (Capture, error) {
	rep := Capture{Schema: SchemaCapture, Iface: iface, ByProtocol: map[string]uint64{}, IfaceCoverage: -1}
	c, err := capture.Start(o.Do, iface, [][]byte{engine.PayloadMarker}, o.Capture)
	if err != nil {
		rep.Error = err.Error()
		return rep, err
	}
	if ready != nil {
		ready()
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		rep.Interrupted = true
	}
	res, err := c.Stop()
	rep.fill(res)
	if err != nil {
		rep.Error = err.Error()
	}
	return rep, err
}

// ParseCaptureFilter reads the address pairs of `agent capture
// --between` ("A,B" each: the two pods' IPs, the two nodes' InternalIPs)
// into a capture filter; errors name the flag and the form wanted.
func ParseCaptureFilter(between []string) (capture.Filter, error) {
	var f capture.Filter
	for _, s := range between {
		p, err := capture.ParseAddrPair(s)
		if err != nil {
			return capture.Filter{}, fmt.Errorf("--between %w", err)
		}
		f.Pairs = append(f.Pairs, p)
	}
	return f, nil
}

func (rep *Capture) fill(r capture.Result) {
	rep.DurationNS = r.Duration.Nanoseconds()
	rep.Frames, rep.In, rep.Out, rep.MarkerFrames = r.Frames, r.In, r.Out, r.MarkerFrames
	if r.ByProto != nil {
		rep.ByProtocol = r.ByProto
	}
	rep.MarkerByProtocol = r.MarkerByProto
	rep.Filter, rep.MatchedFrames, rep.MatchedMarkerFrames, rep.MatchedByProtocol = r.Filter, r.Matched, r.MatchedMarker, r.MatchedByProto
	rep.KernelPackets, rep.KernelDrops = r.SocketPackets, r.Dropped
	rep.ScannedFraction, rep.IfaceCoverage = r.SocketCoverage(), r.IfaceCoverage()
	if err := r.Check(); err != nil {
		rep.CheckError = err.Error()
	}
}
