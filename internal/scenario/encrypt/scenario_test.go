package encrypt

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/capture"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
)

func TestPoints(t *testing.T) {
	s, err := New(Options{Families: []string{WireGuard}})
	if err != nil {
		t.Fatal(err)
	}
	pts := s.Points()
	if len(pts) != 4 {
		t.Fatalf("%d points, want none and three WireGuard points", len(pts))
	}
	if l := pts[0].Labels; l[LabelEncryption] != None || l[LabelCipher] != None || l[LabelPodMTU] != MTUWire || pts[0].Skip != nil {
		t.Errorf("first point %v (%v), want the none baseline", l, pts[0].Skip)
	}
	for _, p := range pts {
		if got := pointOf(p).labels(); strings.Join(sortedKV(got), ",") != strings.Join(sortedKV(p.Labels), ",") {
			t.Errorf("labels %v do not round-trip: %v", p.Labels, got)
		}
	}
	all, _ := New(Options{})
	if n := len(all.Points()); n != 1+3+5 {
		t.Errorf("%d points with both families, want 9", n)
	}
	if _, err := New(Options{Families: []string{"tls"}}); err == nil || !strings.Contains(err.Error(), "--encrypt \"tls\"") {
		t.Errorf("bad family: %v", err)
	}
	cells := s.Cells(pts[0])
	rated := 0
	for _, c := range cells {
		if c.Rate != "" {
			rated++
			if c.Labels[LabelRate] != c.Rate || c.Test != engine.TCPStream {
				t.Errorf("fixed-rate cell %+v", c)
			}
		}
	}
	if len(cells) != 5 || rated != 1 {
		t.Errorf("%d cells, %d at a fixed rate", len(cells), rated)
	}
}

func sortedKV(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// TestVerdict: short messages cannot carry the marker, so rr and crr
// cells are proven by the tunnel's frames alone; streams by the capture's
// whole verdict.
func TestVerdict(t *testing.T) {
	enc := func(marker, tunnel uint64) capture.Result {
		return capture.Result{Iface: "wire0", Frames: 1000, MarkerFrames: marker, EncProtos: []string{"udp/51820"},
			ByProto: map[string]uint64{"udp/51820": tunnel, "tcp": 1000 - tunnel}, MinEncFrames: 1}
	}
	tests := []struct {
		name      string
		encrypted bool
		test      string
		res       capture.Result
		want      string
	}{
		{"rr encrypted", true, engine.TCPRR, enc(0, 900), ""},
		{"rr marker in clear", true, engine.TCPRR, enc(3, 900), "marker in clear"},
		{"rr no tunnel frame", true, engine.TCPCRR, enc(0, 0), "no frame of"},
		{"rr in clear", false, engine.TCPRR, enc(0, 0), ""},
		{"rr in clear through a tunnel", false, engine.TCPRR, enc(0, 5), "tunnel frames were captured"},
		{"stream in clear without marker", false, engine.TCPStream, enc(0, 0), "negative control"},
		{"stream in clear", false, engine.TCPStream, enc(800, 0), ""},
		{"stream leaking", true, engine.TCPStream, enc(1, 900), "not (all) encrypted"},
	}
	for _, tt := range tests {
		err := verdict(tt.encrypted, tt.test, tt.res)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
	_ = scenario.Cell{}
}
