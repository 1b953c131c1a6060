package agent

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/capture"
)

func TestParseCaptureFilter(t *testing.T) {
	for _, tt := range []struct {
		between []string
		want    string
		err     string
	}{
		{between: nil, want: ""},
		{between: []string{"10.244.1.5,10.244.2.7", "192.168.1.10,192.168.1.11"}, want: "10.244.1.5<->10.244.2.7, 192.168.1.10<->192.168.1.11"},
		{between: []string{"10.244.1.5"}, err: `--between "10.244.1.5": want two IP addresses`},
		{between: []string{"10.0.0.1,10.0.0.2", "a,b"}, err: "--between"},
	} {
		f, err := ParseCaptureFilter(tt.between)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.between, err, tt.err)
			}
			continue
		}
		if err != nil || f.String() != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.between, f.String(), err, tt.want)
		}
	}
}

func TestCaptureFillMatched(t *testing.T) {
	var rep Capture
	rep.fill(capture.Result{Frames: 10, Filter: "a<->b", Matched: 4, MatchedMarker: 1, MatchedByProto: map[string]uint64{"tcp": 4}, MinCoverage: 0.99})
	if rep.Filter != "a<->b" || rep.MatchedFrames != 4 || rep.MatchedMarkerFrames != 1 || rep.MatchedByProtocol["tcp"] != 4 {
		t.Errorf("%+v", rep)
	}
}
