package server

import (
	"crypto/subtle"

	"github.com/cnibench/cnibench/internal/engine"
)

// checkToken compares a hello's token with the server's in constant time.
// A server without a token accepts every hello. Neither token is ever
// logged or echoed.
func checkToken(want, got string) error {
	if want == "" {
		return nil
	}
	if got == "" {
		return refusef(engine.CodeAuth, "this server requires a token: pass --token or set %s on `cnibench run`", engine.TokenEnv)
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return refusef(engine.CodeAuth, "wrong token: give `cnibench run` the server's --token (or %s)", engine.TokenEnv)
	}
	return nil
}
