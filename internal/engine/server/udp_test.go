package server

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

// sendUDP sends one datagram from a socket bound to 127.0.0.1:srcPort.
func sendUDP(t *testing.T, fd, port int, b []byte) {
	t.Helper()
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
}

func udpSocket(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := sock.SetRcvTimeout(fd, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return fd
}

// Each flow's datagrams reach its own server socket, even when every flow
// comes from one source port (hashing would put them all on one socket).
func TestUDPSteeringOneSocketPerFlow(t *testing.T) {
	const n = 4
	fds, port, steered, err := listenUDPSteered(netip.MustParseAddr("127.0.0.1"), n, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	if !steered {
		t.Fatal("steering program not attached")
	}
	src := udpSocket(t)
	for round := 0; round < 3; round++ {
		for flow := 0; flow < n; flow++ {
			b := make([]byte, engine.UDPStreamHeader)
			engine.PutUDPHeader(b, 1, uint64(round), flow)
			sendUDP(t, src, port, b)
		}
	}
	buf := make([]byte, 64)
	for i, fd := range fds {
		for round := 0; round < 3; round++ {
			k, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				t.Fatalf("socket %d got %d of its flow's 3 datagrams: %v", i, round, err)
			}
			if _, _, flow, _ := engine.ParseUDPHeader(buf[:k]); flow != i {
				t.Fatalf("socket %d received flow %d's datagram", i, flow)
			}
		}
	}
}

// The UDP data plane answers only the session's peer with its cookie:
// anything else is dropped and counted, never answered (no reflection).
func TestUDPServerDropsForeignDatagrams(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		name   string
		peer   netip.Addr
		cookie uint64
		size   int
		answer bool
	}{
		{"session peer with cookie", lo, 7, engine.UDPRRHeader, true},
		{"wrong cookie", lo, 8, engine.UDPRRHeader, false},
		{"other address", netip.MustParseAddr("198.51.100.1"), 7, engine.UDPRRHeader, false},
		{"too short for the header", lo, 7, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			si := sessionInfo{Local: lo, Peer: tt.peer, Cookie: 7}
			us, err := newUDPServer(lo, si, &engine.Setup{Test: engine.UDPRR, Flows: 1, ReqSize: 1, RespSize: 1000, MsgSize: 1}, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer us.Close()
			c := udpSocket(t)
			b := make([]byte, max(tt.size, engine.UDPRRHeader))
			engine.PutUDPHeader(b, tt.cookie, 1, 0)
			sendUDP(t, c, us.Port(), b[:tt.size])
			resp := make([]byte, 2000)
			n, _, err := unix.Recvfrom(c, resp, 0)
			if tt.answer && (err != nil || n != 1000) {
				t.Fatalf("no answer to the session's peer: %d, %v", n, err)
			}
			if !tt.answer {
				if err == nil {
					t.Fatalf("answered a foreign datagram with %d bytes", n)
				}
				if us.recv().Foreign != 1 {
					t.Fatalf("foreign datagrams counted: %d", us.recv().Foreign)
				}
			}
		})
	}
}
