package profile

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// timedProfile builds a profile whose samples were taken at the given
// perf times (ns on the monotonic clock), with the wall clock 1000 s
// ahead of it.
func timedProfile(t *testing.T, samples ...timedSample) *Profile {
	t.Helper()
	c := newCollector(testProcs)
	c.ts = timestamper{on: true, offset: int64(1000 * time.Second)}
	for _, s := range samples {
		c.record(marshalSample(rawSample{pid: s.pid, tid: s.pid, cpu: 0, period: 1000, time: uint64(s.at)}, s.chain))
	}
	p := c.build(buildInfo{start: time.Unix(1000, 0), window: 10 * time.Second, frequency: 999, cpus: 1}, testKernel(t))
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return &Profile{P: p, Samples: int(c.samples), Frequency: 999, CPUs: 1, Window: 10 * time.Second, Windows: 1}
}

type timedSample struct {
	at    time.Duration // perf time
	pid   uint32
	chain []uint64
}

// wall is the wall-clock time of perf time d in timedProfile.
func wall(d time.Duration) time.Time { return time.Unix(1000, 0).Add(d) }

func TestCrop(t *testing.T) {
	tcp := kchain(kTCPSend, kSyscall)
	idle := kchain(kHalt, kIdle)
	p := timedProfile(t,
		timedSample{500 * time.Millisecond, 100, tcp},  // before the windows
		timedSample{1005 * time.Millisecond, 100, tcp}, // in [1 s, 2 s)
		timedSample{1007 * time.Millisecond, 100, tcp}, // same bucket: aggregated
		timedSample{1500 * time.Millisecond, 0, idle},  // in [1 s, 2 s)
		timedSample{1999 * time.Millisecond, 100, tcp}, // in [1 s, 2 s)
		timedSample{2000 * time.Millisecond, 100, tcp}, // at the end: out
		timedSample{3200 * time.Millisecond, 0, idle},  // in [3 s, 4 s)
		timedSample{4000 * time.Millisecond, 0, idle},  // out
		timedSample{12 * time.Second, 100, tcp},        // after the profile's window
	)
	if p.Samples != 9 || len(p.P.Sample) != 8 {
		t.Fatalf("%d samples in %d pprof samples, want 9 in 8 (one bucket aggregated)", p.Samples, len(p.P.Sample))
	}
	for _, s := range p.P.Sample {
		if got := s.NumLabel[TimeLabel]; len(got) != 1 || got[0]%int64(TimestampResolution) != 0 {
			t.Fatalf("sample time label %v: want one bucket start", got)
		}
	}
	tests := []struct {
		name      string
		spans     []Span
		samples   int
		tcp, idle int64
		window    time.Duration
		wantErr   string
	}{
		{name: "one window", spans: []Span{{wall(time.Second), wall(2 * time.Second)}}, samples: 4, tcp: 3, idle: 1, window: time.Second},
		{name: "two windows", spans: []Span{{wall(time.Second), wall(2 * time.Second)}, {wall(3 * time.Second), wall(4 * time.Second)}}, samples: 5, tcp: 3, idle: 2, window: 2 * time.Second},
		{name: "beyond the profile", spans: []Span{{wall(9 * time.Second), wall(20 * time.Second)}}, samples: 1, tcp: 1, window: time.Second},
		{name: "nothing in it", spans: []Span{{wall(5 * time.Second), wall(6 * time.Second)}}, samples: 0, window: time.Second},
		{name: "reversed", spans: []Span{{wall(2 * time.Second), wall(time.Second)}}, wantErr: "window 0 ends"},
		{name: "none", wantErr: "no window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CropSpans(p, tc.spans...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := c.P.CheckValid(); err != nil {
				t.Fatal(err)
			}
			var tcp, idle int64
			for _, s := range c.P.Sample {
				if _, ok := s.NumLabel[TimeLabel]; ok {
					t.Errorf("cropped sample keeps %s", TimeLabel)
				}
				switch s.Location[0].Line[0].Function.Name {
				case "tcp_sendmsg":
					tcp += s.Value[0]
				case "pv_native_safe_halt":
					idle += s.Value[0]
				}
			}
			if c.Samples != tc.samples || tcp != tc.tcp || idle != tc.idle {
				t.Errorf("kept %d samples (tcp %d, idle %d), want %d (%d, %d)", c.Samples, tcp, idle, tc.samples, tc.tcp, tc.idle)
			}
			if c.Window != tc.window || c.Windows != len(tc.spans) {
				t.Errorf("window %v in %d windows, want %v in %d", c.Window, c.Windows, tc.window, len(tc.spans))
			}
			if tc.tcp == 3 && len(c.P.Sample) != 2 {
				t.Errorf("%d pprof samples, want 2: the same stack's buckets merge once the time is dropped", len(c.P.Sample))
			}
			var buf bytes.Buffer
			if err := c.Write(&buf); err != nil {
				t.Fatal(err)
			}
		})
	}
	if p.Samples != 9 || len(p.P.Sample) != 8 {
		t.Error("Crop changed its input")
	}
}

func TestCropNeedsTimestamps(t *testing.T) {
	p := samplesProfile(t, rawChain{100, 0, 1, kchain(kTCPSend)})
	if _, err := Crop(p, time.Unix(0, 0), time.Unix(2, 0)); err == nil || !strings.Contains(err.Error(), "Options.Timestamps") {
		t.Errorf("crop of a profile without timestamps: %v", err)
	}
	if _, err := Crop(nil, time.Unix(0, 0), time.Unix(2, 0)); err == nil {
		t.Error("crop of nil succeeded")
	}
}

func TestTimestamperBucket(t *testing.T) {
	tests := []struct {
		ts   timestamper
		perf uint64
		want int64
	}{
		{timestamper{}, 12345678, 0},
		{timestamper{on: true, offset: 5}, 19_999_994, 10_000_000},
		{timestamper{on: true, offset: 5}, 19_999_995, 20_000_000},
		{timestamper{on: true, offset: int64(time.Hour)}, 1, int64(time.Hour)},
	}
	for _, tc := range tests {
		if got := tc.ts.bucket(tc.perf); got != tc.want {
			t.Errorf("%+v.bucket(%d) = %d, want %d", tc.ts, tc.perf, got, tc.want)
		}
	}
}
