package server

import (
	"context"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
)

// TestUDPStreamHandshakeOverLoopback: with the option each flow's
// handshake is answered and the stream runs; the option is recorded.
func TestUDPStreamHandshakeOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping network integration test")
	}
	_, addr := startServer(t)
	cfg := quick(addr, engine.UDPStream, 2)
	cfg.UDPHandshake = true
	res, err := (&client.Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkResult(t, res, engine.UDPStream)
	if res.Config["udp_handshake"] != engine.UDPHandshakeText {
		t.Fatalf("config udp_handshake = %q", res.Config["udp_handshake"])
	}
	cfg.UDPHandshake = false
	res, err = (&client.Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run without the handshake: %v", err)
	}
	if _, ok := res.Config["udp_handshake"]; ok {
		t.Fatal("udp_handshake recorded without the option")
	}
}
