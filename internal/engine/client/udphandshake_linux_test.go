package client

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine/sock"
)

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
