package engine

import (
	"context"
	"github.com/cnibench/cnibench/internal/engine/sock"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestUDPHelloRoundTrip(t *testing.T) {
	h := udpHello(42, 3)
	tests := []struct {
		name   string
		b      []byte
		cookie uint64
		flow   int
		want   bool
	}{
		{"own", h, 42, 3, true},
		{"other cookie", h, 43, 3, false},
		{"other flow", h, 42, 4, false},
		{"truncated", h[:udpRRHeader], 42, 3, false},
		{"stream datagram", func() []byte { b := append([]byte(nil), h...); b[udpOffPhase] = phaseMeasured; return b }(), 42, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isUDPHello(tt.b, tt.cookie, tt.flow); got != tt.want {
				t.Fatalf("isUDPHello = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUDPStreamHandshakeOverLoopback: with the option each flow's
// handshake is answered and the stream runs; the option is recorded.
func TestUDPStreamHandshakeOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping network integration test")
	}
	_, addr := startServer(t)
	cfg := quick(addr, UDPStream, 2)
	cfg.UDPHandshake = true
	res, err := (&Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkResult(t, res, UDPStream)
	if res.Config["udp_handshake"] != UDPHandshakeText {
		t.Fatalf("config udp_handshake = %q", res.Config["udp_handshake"])
	}
	cfg.UDPHandshake = false
	res, err = (&Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run without the handshake: %v", err)
	}
	if _, ok := res.Config["udp_handshake"]; ok {
		t.Fatal("udp_handshake recorded without the option")
	}
}

// TestUDPHandshakeUnanswered: a peer that never answers fails the
// handshake within the timeout, with a message saying what was missing.
func TestUDPHandshakeUnanswered(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ap := netip.MustParseAddrPort(pc.LocalAddr().String())
	fd, err := sock.DialUDP(ap.Addr(), int(ap.Port()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close(fd)
	t0 := time.Now()
	err = udpHandshake(fd, 7, 0, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no reply from the server") {
		t.Fatalf("err = %v, want no reply", err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("took %s, want about the 300ms timeout", el)
	}
	// A peer that echoes the hello completes it.
	go func() {
		b := make([]byte, 64)
		n, from, err := pc.ReadFrom(b)
		if err == nil {
			_, _ = pc.WriteTo(b[:n], from)
		}
	}()
	if err := udpHandshake(fd, 7, 0, 2*time.Second); err != nil {
		t.Fatalf("echoing peer: %v", err)
	}
}
