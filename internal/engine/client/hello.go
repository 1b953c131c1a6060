package client

import (
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

// newHello is the client's hello for a run of cfg: the token, the longest
// silence the client will keep on the control connection while a test is
// set up (warm-up and window, plus a second for opening flows and draining
// udp_stream), and the test to reserve budget for.
func newHello(cfg engine.Config, token string) *engine.Hello {
	if cfg.Test == engine.UDPStream && cfg.MsgSize == 0 {
		// udp_stream's datagram size follows the path MTU, learnt only
		// once connected: reserve the largest.
		cfg.MsgSize = engine.MaxUDPSize
	}
	return &engine.Hello{
		Proto: engine.ProtoMagic, Version: engine.ProtoVersion, Tool: "cnibench", Token: token,
		WindowMillis: (cfg.Warmup + cfg.Duration + time.Second).Milliseconds(),
		// Sizes the client only knows after connecting (udp_stream's
		// datagram size follows the path MTU) are reserved as 1 byte: the
		// setup then grows the reservation.
		Reserve: &engine.Setup{Test: dataTest(cfg.Test), Flows: cfg.Flows, ReqSize: max(cfg.ReqSize, 1), RespSize: max(cfg.RespSize, 1),
			MsgSize: max(cfg.MsgSize, 1), HTTPBody: cfg.HTTPBody, TimeoutMillis: cfg.Timeout.Milliseconds()},
	}
}

// dataTest is the test a session sets up on the server for cfg's test:
// tcp_rr_loaded's measured flows are tcp_rr's (its load is a tcp_stream
// session of its own, loaded.go).
func dataTest(test string) string {
	if test == engine.TCPRRLoaded {
		return engine.TCPRR
	}
	return test
}
