package sock

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRecvBlock checks the data path's read (recvfrom without an address)
// on a loopback TCP connection: data, a receive timeout, the peer's FIN and
// a closed descriptor.
func TestRecvBlock(t *testing.T) {
	lfd, port, err := ListenTCP(netip.MustParseAddr("127.0.0.1"), 8)
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer Close(lfd)
	cfd, _, err := DialTCP(netip.MustParseAddr("127.0.0.1"), port, 200*time.Millisecond, true, false)
	if err != nil {
		t.Fatal(err)
	}
	sfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	tests := []struct {
		name    string
		setup   func()
		buf     []byte
		wantN   int
		wantErr error
	}{
		{"data", func() {
			if err := WriteSmall(sfd, []byte("hello")); err != nil {
				t.Fatal(err)
			}
		}, buf, 5, nil},
		{"empty buffer", func() {}, buf[:0], 0, nil},
		{"timeout", func() {}, buf, 0, unix.EAGAIN},
		{"peer closed", func() { Close(sfd) }, buf, 0, nil},
		{"closed descriptor", func() { Close(cfd) }, buf, 0, unix.EBADF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			n, err := RecvBlock(cfd, tc.buf)
			if n != tc.wantN || !errors.Is(err, tc.wantErr) && !(err == nil && tc.wantErr == nil) {
				t.Fatalf("RecvBlock = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}
}

// TestRawSocketCalls checks that the raw socket, setsockopt and close
// calls do what the scheduler-aware ones do, and report errors.
func TestRawSocketCalls(t *testing.T) {
	fd, err := socketRaw(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opt  int
		val  int
	}{
		{"TCP_NODELAY on", unix.TCP_NODELAY, 1},
		{"TCP_NODELAY off", unix.TCP_NODELAY, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := setsockoptIntRaw(fd, unix.IPPROTO_TCP, tc.opt, tc.val); err != nil {
				t.Fatal(err)
			}
			got, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, tc.opt)
			if err != nil || got != tc.val {
				t.Fatalf("option = %d, %v; want %d", got, err, tc.val)
			}
		})
	}
	if err := SetTimeouts(fd, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO)
	if err != nil || time.Duration(tv.Nano()) != 300*time.Millisecond {
		t.Fatalf("SO_SNDTIMEO = %v, %v; want 300ms", tv, err)
	}
	Close(fd)
	if err := setsockoptIntRaw(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); !errors.Is(err, unix.EBADF) {
		t.Fatalf("setsockopt on a closed descriptor: %v, want EBADF", err)
	}
	if _, err := socketRaw(-1, unix.SOCK_STREAM, 0); err == nil {
		t.Fatal("socket with family -1 succeeded")
	}
}
