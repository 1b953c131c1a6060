package encrypt

import (
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/capture"
)

func TestPodVerdict(t *testing.T) {
	enc := func(r capture.Result) capture.Result {
		r.Iface, r.EncProtos, r.MinEncFrames, r.MinCoverage = "eth0", []string{"udp/51820"}, 100, 0.99
		if r.IfaceRx+r.IfaceTx == 0 {
			r.In, r.InSegs, r.IfaceRx = r.Frames, r.Frames, r.Frames
		}
		return r
	}
	tests := []struct {
		name      string
		encrypted bool
		res       capture.Result
		is        error
		want      string // substring of the error; "" for none
	}{
		{"encrypted proven", true, enc(capture.Result{Frames: 500, ByProto: map[string]uint64{"udp/51820": 500}}), nil, ""},
		{"pods in clear", true, enc(capture.Result{Frames: 500, Matched: 3, ByProto: map[string]uint64{"udp/51820": 497, "tcp": 3}}), capture.ErrCleartext, "3 of 500 frames"},
		{"marker", true, enc(capture.Result{Frames: 500, MarkerFrames: 1, ByProto: map[string]uint64{"udp/51820": 500}}), capture.ErrCleartext, "marker"},
		{"too few tunnel frames", true, enc(capture.Result{Frames: 50, ByProto: map[string]uint64{"udp/51820": 50}}), capture.ErrUnproven, "need 100"},
		{"capture fell behind", true, enc(capture.Result{Frames: 500, In: 500, InSegs: 500, IfaceRx: 1000, ByProto: map[string]uint64{"udp/51820": 500}}), capture.ErrUnproven, "50.00%, need 99.00%"},
		{"clear seen", false, capture.Result{Frames: 10, Matched: 10, EncProtos: []string{"udp/51820"}, ByProto: map[string]uint64{"tcp": 10}}, nil, ""},
		{"clear unseen", false, capture.Result{Frames: 10, EncProtos: []string{"udp/51820"}, ByProto: map[string]uint64{"arp": 10}}, capture.ErrUnproven, "negative control"},
		{"tunnel without encryption", false, capture.Result{Frames: 10, Matched: 5, EncProtos: []string{"udp/51820"}, ByProto: map[string]uint64{"udp/51820": 5, "tcp": 5}}, nil, "tunnel frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := podVerdict(tt.encrypted, tt.res)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("got %v, want errors.Is %v", err, tt.is)
			}
		})
	}
}
