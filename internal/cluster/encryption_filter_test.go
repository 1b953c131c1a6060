package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/kube/agent"
)

func TestCaptureBetween(t *testing.T) {
	for _, tt := range []struct {
		podA, podB, nodeA, nodeB string
		want                     []string
	}{
		{"10.244.1.5", "10.244.2.7", "192.168.1.10", "192.168.1.11",
			[]string{"--between", "10.244.1.5,10.244.2.7", "--between", "192.168.1.10,192.168.1.11"}},
		{"", "10.244.2.7", "192.168.1.10", "192.168.1.11", []string{"--between", "192.168.1.10,192.168.1.11"}},
		{"10.244.1.5", "10.244.2.7", "192.168.1.10", "192.168.1.10", []string{"--between", "10.244.1.5,10.244.2.7"}},
		{"", "", "", "", nil},
	} {
		if got := captureBetween(tt.podA, tt.podB, tt.nodeA, tt.nodeB); !slices.Equal(got, tt.want) {
			t.Errorf("%v: got %q, want %q", tt, got, tt.want)
		}
	}
}

// TestEncryptionVerdictFiltered: with a filter, only the frames between
// the two pods or the two nodes are judged.
func TestEncryptionVerdictFiltered(t *testing.T) {
	const filter = "10.244.1.5<->10.244.2.7, 192.168.1.10<->192.168.1.11"
	tests := []struct {
		name              string
		c                 agent.Capture
		verdict           string
		summary, evidence string
	}{
		{name: "another workload's clear traffic does not make it clear",
			c: agent.Capture{Filter: filter, Frames: 6000, MarkerFrames: 900, ByProtocol: map[string]uint64{"tcp": 1000, "udp/51820": 5000},
				MatchedFrames: 5000, MatchedByProtocol: map[string]uint64{"udp/51820": 5000}},
			verdict: "encrypted", summary: "no payload marker in 5000 frames between " + filter,
			evidence: "6000 frames captured in all; the other 1000 (other workloads, the nodes' other peers) are not judged, 900 of them carrying the payload marker"},
		{name: "the run's own clear traffic",
			c:       agent.Capture{Filter: filter, Frames: 3000, MarkerFrames: 1400, MatchedFrames: 2990, MatchedMarkerFrames: 1400, MatchedByProtocol: map[string]uint64{"udp/8472": 2990}},
			verdict: "clear", summary: "marker was seen in 1400 frames between", evidence: "2990 frames between " + filter + ", 1400 carrying the payload marker; by protocol: udp/8472 2990"},
		{name: "other traffic does not make it conclusive",
			c:       agent.Capture{Filter: filter, Frames: 50000, MatchedFrames: 12, MatchedByProtocol: map[string]uint64{"tcp": 12}},
			verdict: "inconclusive", summary: "only 12 frames between"},
		{name: "no filter: every frame", c: agent.Capture{Frames: 3000, MarkerFrames: 1}, verdict: "clear", summary: "in 1 frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := encryptionVerdict(tt.c)
			if f.Verdict != tt.verdict || !strings.Contains(f.Summary, tt.summary) {
				t.Errorf("got %s %q, want %s %q", f.Verdict, f.Summary, tt.verdict, tt.summary)
			}
			if tt.evidence != "" && !strings.Contains(strings.Join(f.Evidence, "\n"), tt.evidence) {
				t.Errorf("evidence %q lacks %q", f.Evidence, tt.evidence)
			}
		})
	}
}
