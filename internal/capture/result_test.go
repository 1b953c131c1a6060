package capture

import (
	"errors"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	base := func() Result {
		o, _ := Options{}.resolve()
		return Result{Iface: "wire0", EncProtos: o.EncProtos, MinEncFrames: o.MinEncFrames, MinCoverage: o.MinCoverage,
			Frames: 10000, In: 5000, InSegs: 5000, Out: 5000, SocketPackets: 10000, IfaceRx: 5000, IfaceTx: 5000,
			ByProto: map[string]uint64{"udp/51820": 9990, "arp": 10}}
	}
	for _, c := range []struct {
		name      string
		change    func(r *Result)
		encrypted bool
		want      error // nil, ErrCleartext or ErrUnproven
		says      string
	}{
		{"encrypted and proven", func(*Result) {}, true, nil, ""},
		{"marker in clear", func(r *Result) {
			r.MarkerFrames, r.MarkerByProto = 3, map[string]uint64{"tcp": 3}
		}, true, ErrCleartext, "3 of 10000 frames on wire0 carried it (tcp 3)"},
		{"marker in clear even when frames were dropped", func(r *Result) {
			r.MarkerFrames, r.Dropped = 1, 5000
		}, true, ErrCleartext, "not (all) encrypted"},
		{"no encryption protocol", func(r *Result) {
			r.ByProto = map[string]uint64{"tcp": 9990, "arp": 10}
		}, true, ErrUnproven, "no traffic captured: 0 frames of esp, udp/4500, udp/51820 on wire0 (need 100) among 10000 (tcp 9990, arp 10)"},
		{"too little of it", func(r *Result) { r.ByProto["udp/51820"] = 99 }, true, ErrUnproven, "no traffic captured: 99 frames"},
		{"another encryption protocol", func(r *Result) { r.EncProtos = []string{"udp/4789"} }, true, ErrUnproven, "no traffic captured"},
		{"ring dropped frames", func(r *Result) { r.Frames, r.Dropped = 9000, 1000 }, true, ErrUnproven, "the ring dropped 1000 of 10000 frames"},
		{"a few drops are tolerated", func(r *Result) { r.Frames, r.Dropped = 9995, 5 }, true, nil, ""},
		{"frames missing from the interface's count", func(r *Result) { r.IfaceRx = 6000 }, true, ErrUnproven, "the interface counted 11000 packets"},
		{"interface counters unread", func(r *Result) { r.IfaceErr = "no such device" }, true, ErrUnproven, "no such device"},
		{"negative control", func(r *Result) { r.MarkerFrames = 1 }, false, nil, ""},
		{"negative control without marker", func(*Result) {}, false, ErrUnproven, "the payload marker is in none of the 10000 frames"},
		{"negative control without traffic", func(r *Result) { r.Frames, r.ByProto = 0, nil }, false, ErrUnproven, "no traffic captured on wire0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base()
			c.change(&r)
			err := r.Verdict(c.encrypted)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("Verdict(%v) = %v, want nil", c.encrypted, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("Verdict(%v) = %v, want %v", c.encrypted, err, c.want)
			case err != nil && !strings.Contains(err.Error(), c.says):
				t.Errorf("Verdict(%v) = %q, want it to say %q", c.encrypted, err, c.says)
			}
		})
	}
}

func TestCoverage(t *testing.T) {
	r := Result{Frames: 990, In: 590, InSegs: 590, Out: 400, Dropped: 10, IfaceRx: 600, IfaceTx: 400}
	if c := r.SocketCoverage(); c != 0.99 {
		t.Errorf("SocketCoverage = %g, want 0.99", c)
	}
	if c := r.IfaceCoverage(); c != 0.99 {
		t.Errorf("IfaceCoverage = %g, want 0.99", c)
	}
	// With GRO, the received frames count as the wire packets they were.
	r = Result{Frames: 110, In: 10, InSegs: 450, Out: 100, RxGRO: true, IfaceRx: 450, IfaceTx: 100}
	if c := r.IfaceCoverage(); c != 1 {
		t.Errorf("IfaceCoverage with GRO = %g, want 1", c)
	}
	if c := (Result{}).SocketCoverage(); c != 1 {
		t.Errorf("SocketCoverage without frames = %g, want 1", c)
	}
	if c := (Result{Frames: 5}).IfaceCoverage(); c != -1 {
		t.Errorf("IfaceCoverage without counters = %g, want -1", c)
	}
}

func TestOptions(t *testing.T) {
	o, err := Options{}.resolve()
	if err != nil || o.SnapLen != DefaultSnapLen || o.RingSize != DefaultRingSize || o.BlockSize != DefaultBlockSize ||
		o.MinEncFrames != DefaultMinEncFrames || o.MinCoverage != DefaultMinCoverage || len(o.EncProtos) != 3 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, bad := range []Options{
		{SnapLen: 10}, {SnapLen: 70000}, {BlockSize: 1000}, {BlockSize: 4096, SnapLen: 4000},
		{RingSize: 1 << 20, BlockSize: 1 << 20}, {MinCoverage: 1.5}, {MinCoverage: -0.5},
	} {
		if _, err := bad.resolve(); err == nil {
			t.Errorf("%+v resolved without error", bad)
		}
	}
	if err := checkMarkers(nil); err == nil {
		t.Error("no marker accepted")
	}
	if err := checkMarkers([][]byte{[]byte("short")}); err == nil {
		t.Error("a 5-byte marker accepted")
	}
}

func TestFormatCounts(t *testing.T) {
	if s := FormatCounts(map[string]uint64{"arp": 2, "udp/51820": 1200, "esp": 2}); s != "udp/51820 1200, arp 2, esp 2" {
		t.Errorf("FormatCounts = %q", s)
	}
	if s := FormatCounts(nil); s != "none" {
		t.Errorf("FormatCounts(nil) = %q", s)
	}
}
