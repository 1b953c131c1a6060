package encrypt

import "github.com/cnibench/cnibench/pkg/result"

// Metrics of every cell's wire capture.
const (
	MetricWireFrames    = "wire_capture_frames"       // frames the capture scanned on node 2's wire
	MetricWireMarker    = "wire_marker_frames"        // … with the payload marker in clear
	MetricWireEncFrames = "wire_encrypted_frames"     // … of the tunnel's protocol
	MetricWireCoverage  = "wire_capture_coverage_pct" // scanned / the interface's packet counters
)

// metrics documents the scenario's own metrics, those above and a point's
// set-up, registered with the scenario (register.go; docs/results.md
// mirrors them).
var metrics = map[string]result.MetricInfo{
	"encryption_setup_seconds":  {Unit: "s", Better: result.LowerIsBetter, Help: "encryption scenario: time to set the point's tunnel up on both nodes (keys, devices or xfrm states, routes, pod MTUs)"},
	"encryption_overhead_bytes": {Unit: "bytes", Better: result.Neutral, Help: "encryption scenario: per-packet overhead of the tunnel on IPv4 (the pods' MTU is lowered by it when pod_mtu=lowered)"},
	MetricWireFrames:            {Unit: "frames", Better: result.Neutral, Help: "encryption scenario: frames the AF_PACKET capture on node 2's wire scanned during the cell (both directions)"},
	MetricWireMarker:            {Unit: "frames", Better: result.LowerIsBetter, Help: "encryption scenario: of those, frames holding the engine's payload marker in clear (0 when encrypted; > 0 is the negative control without encryption)"},
	MetricWireEncFrames:         {Unit: "frames", Better: result.Neutral, Help: "encryption scenario: of those, frames of the tunnel's protocol (udp/51820 for WireGuard, esp or udp/4500 for IPsec)"},
	MetricWireCoverage:          {Unit: "%", Better: result.Neutral, Help: "encryption scenario: frames the capture scanned as a share of the packets the wire interface counted (the proof needs the capture to have kept up)"},
}
