package engine

import (
	"crypto/subtle"
	"time"
)

// TokenEnv is the environment variable `cnibench serve` and `cnibench run`
// read the shared secret from when --token is not given. The suite (and
// later the Kubernetes backend) generates one per run and sets it on its
// children.
const TokenEnv = "CNIBENCH_TOKEN"

// checkToken compares a hello's token with the server's in constant time.
// A server without a token accepts every hello. Neither token is ever
// logged or echoed.
func checkToken(want, got string) error {
	if want == "" {
		return nil
	}
	if got == "" {
		return refusef(CodeAuth, "this server requires a token: pass --token or set %s on `cnibench run`", TokenEnv)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return refusef(CodeAuth, "wrong token: give `cnibench run` the server's --token (or %s)", TokenEnv)
	}
	return nil
}

// newHello is the client's hello for a run of cfg: the token, the longest
// silence the client will keep on the control connection while a test is
// set up (warm-up and window, plus a second for opening flows and draining
// udp_stream), and the test to reserve budget for.
func newHello(cfg Config, token string) *Hello {
	if cfg.Test == UDPStream && cfg.MsgSize == 0 {
		// udp_stream's datagram size follows the path MTU, learnt only
		// once connected: reserve the largest.
		cfg.MsgSize = MaxUDPSize
	}
	return &Hello{
		Proto: ProtoMagic, Version: ProtoVersion, Tool: "cnibench", Token: token,
		WindowMillis: (cfg.Warmup + cfg.Duration + time.Second).Milliseconds(),
		// Sizes the client only knows after connecting (udp_stream's
		// datagram size follows the path MTU) are reserved as 1 byte: the
		// setup then grows the reservation.
		Reserve: &Setup{Test: dataTest(cfg.Test), Flows: cfg.Flows, ReqSize: max(cfg.ReqSize, 1), RespSize: max(cfg.RespSize, 1),
			MsgSize: max(cfg.MsgSize, 1), HTTPBody: cfg.HTTPBody, TimeoutMillis: cfg.Timeout.Milliseconds()},
	}
}
