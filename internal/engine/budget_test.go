package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestBudget(t *testing.T) {
	b := budget{lim: Limits{MaxFlows: 64, MaxBufferBytes: 16 << 20}}
	tests := []struct {
		name      string
		have, ask cost
		wantErr   string // substring; "" = granted
	}{
		{"fits", cost{}, cost{32, 1 << 20}, ""},
		{"grows within the rest", cost{}, cost{32, 1 << 20}, ""},
		{"flows over", cost{}, cost{8, 0}, "flows 8 exceed the server's free budget of 0 (cnibench serve --max-flows)"},
		{"a holder may grow into what it holds", cost{32, 1 << 20}, cost{32, 2 << 20}, ""},
		{"memory over", cost{}, cost{0, 20 << 20}, "buffers of 20M exceed the server's free budget of 13M (cnibench serve --max-buffer-mem)"},
	}
	for _, tc := range tests {
		got, err := b.grow(tc.have, tc.ask)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Fatalf("%s: refused: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Fatalf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		case tc.wantErr != "" && got != tc.have:
			t.Fatalf("%s: a refusal changed the holding to %+v", tc.name, got)
		}
		var rf *refusal
		if err != nil && (!errors.As(err, &rf) || rf.code != CodeRefused) {
			t.Fatalf("%s: %v is not a refusal", tc.name, err)
		}
	}
	b.release(cost{32, 1 << 20})
	b.release(cost{32, 2 << 20})
	if u := b.inUse(); u != (cost{}) {
		t.Fatalf("in use after release: %+v", u)
	}
}

func TestSetupCost(t *testing.T) {
	tests := []struct {
		s    Setup
		want cost
	}{
		{Setup{Test: TCPStream, Flows: 4, MsgSize: 128 << 10}, cost{4, 4 * 256 << 10}},
		{Setup{Test: TCPStream, Flows: 1, MsgSize: 1 << 20}, cost{1, 1 << 20}},
		{Setup{Test: TCPRR, Flows: 256, ReqSize: 1 << 20, RespSize: 1 << 20}, cost{256, 256 * 2 << 20}},
		{Setup{Test: HTTP, Flows: 1000, HTTPBody: 1024}, cost{1000, 1024 + 1000*8<<10}},
	}
	for _, tc := range tests {
		if got := setupCost(&tc.s); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.s.Test, got, tc.want)
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{MaxFlows: 8}.withDefaults()
	d := DefaultLimits()
	if got.MaxFlows != 8 || got.MaxSessions != d.MaxSessions || got.IdleTimeout != d.IdleTimeout || got.MaxBufferBytes != d.MaxBufferBytes {
		t.Fatalf("withDefaults: %+v", got)
	}
	// Go crashes at 10 000 threads: the default flow budget (one thread
	// per flow) must stay far below.
	if d.MaxFlows > 4096 {
		t.Fatalf("default flow budget %d too close to Go's thread limit", d.MaxFlows)
	}
}

func TestCheckToken(t *testing.T) {
	tests := []struct {
		want, got string
		err       string
	}{
		{"", "", ""},
		{"", "anything", ""},
		{"s3cret", "s3cret", ""},
		{"s3cret", "", "requires a token"},
		{"s3cret", "s3cre", "wrong token"},
		{"s3cret", "s3cret2", "wrong token"},
	}
	for _, tc := range tests {
		err := checkToken(tc.want, tc.got)
		if tc.err == "" {
			if err != nil {
				t.Errorf("checkToken(%q, %q): %v", tc.want, tc.got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("checkToken(%q, %q): got %v, want %q", tc.want, tc.got, err, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), tc.want) {
			t.Errorf("the refusal echoes the token: %v", err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{256 << 20: "256M", 13 << 20: "13M", 3 << 10: "3K", 100: "100 bytes", 1<<20 + 1: "1.0M"} {
		if got := formatBytes(in); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestNewHelloReservationIsValid: the reservation a client sends for any
// valid configuration passes the server's validation (sizes decided after
// connecting, like udp_stream's datagram size, are still zero then).
func TestNewHelloReservationIsValid(t *testing.T) {
	for _, test := range Tests {
		cfg := Defaults(Config{Target: "x", Test: test})
		h := newHello(cfg, "tok")
		if err := ValidateSetup(h.Reserve); err != nil {
			t.Errorf("%s: reservation %+v refused: %v", test, *h.Reserve, err)
		}
		if want := (cfg.Warmup + cfg.Duration).Milliseconds(); h.WindowMillis <= want {
			t.Errorf("%s: declared window %dms, want more than warm-up plus duration (%dms)", test, h.WindowMillis, want)
		}
		if h.Token != "tok" || h.Version != ProtoVersion {
			t.Errorf("%s: hello %+v", test, h)
		}
	}
}
