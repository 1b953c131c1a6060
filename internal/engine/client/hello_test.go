package client

import (
	"fmt"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
)

func TestLoadFlowsValidation(t *testing.T) {
	tests := []struct {
		test      string
		loadFlows int
		wantErr   string
	}{
		{engine.TCPRRLoaded, 0, ""}, // the default
		{engine.TCPRRLoaded, 1, ""},
		{engine.TCPRRLoaded, engine.MaxFlows, ""},
		{engine.TCPRRLoaded, -1, "--load-flows -1: must be between 1 and 256"},
		{engine.TCPRRLoaded, engine.MaxFlows + 1, "--load-flows 257: must be between 1 and 256"},
		{engine.TCPRR, 4, "--load-flows 4: only tcp_rr_loaded takes --load-flows"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.test, tt.loadFlows), func(t *testing.T) {
			cfg := engine.Defaults(engine.Config{Target: "127.0.0.1", Test: tt.test, LoadFlows: tt.loadFlows})
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tt.loadFlows == 0 && cfg.LoadFlows != engine.DefaultLoadFlows {
					t.Fatalf("default load flows %d, want %d", cfg.LoadFlows, engine.DefaultLoadFlows)
				}
				return
			}
			if err == nil || err.Error()[:len(tt.wantErr)] != tt.wantErr {
				t.Fatalf("got %v, want %q…", err, tt.wantErr)
			}
		})
	}
	svc := engine.Defaults(engine.Config{Service: "127.0.0.1:12871", Test: engine.TCPRRLoaded})
	if err := svc.Validate(); err == nil {
		t.Fatal("tcp_rr_loaded in service mode accepted")
	}
	// The server never sets tcp_rr_loaded up: the client sends tcp_rr.
	if err := engine.ValidateSetup(&engine.Setup{Test: engine.TCPRRLoaded, Flows: 1, ReqSize: 1, RespSize: 1, MsgSize: 1}); err == nil {
		t.Fatal("a tcp_rr_loaded setup accepted by the server")
	}
	if h := newHello(engine.Defaults(engine.Config{Target: "x", Test: engine.TCPRRLoaded}), ""); h.Reserve.Test != engine.TCPRR {
		t.Fatalf("tcp_rr_loaded reserves %q, want tcp_rr", h.Reserve.Test)
	}
}

// TestNewHelloReservationIsValid: the reservation a client sends for any
// valid configuration passes the server's validation (sizes decided after
// connecting, like udp_stream's datagram size, are still zero then).
func TestNewHelloReservationIsValid(t *testing.T) {
	for _, test := range engine.Tests {
		cfg := engine.Defaults(engine.Config{Target: "x", Test: test})
		h := newHello(cfg, "tok")
		if err := engine.ValidateSetup(h.Reserve); err != nil {
			t.Errorf("%s: reservation %+v refused: %v", test, *h.Reserve, err)
		}
		if want := (cfg.Warmup + cfg.Duration).Milliseconds(); h.WindowMillis <= want {
			t.Errorf("%s: declared window %dms, want more than warm-up plus duration (%dms)", test, h.WindowMillis, want)
		}
		if h.Token != "tok" || h.Version != engine.ProtoVersion {
			t.Errorf("%s: hello %+v", test, h)
		}
	}
}
