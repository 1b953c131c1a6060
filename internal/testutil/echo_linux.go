package testutil

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Do runs f inside a network namespace (lab.NS.Do): sockets created in f
// belong to that namespace.
type Do func(f func() error) error

// ioTimeout bounds every echo exchange.
const ioTimeout = 5 * time.Second

// StartTCPEcho listens on ip (port chosen by the kernel) inside the
// namespace and echoes every connection until the test ends.
func StartTCPEcho(tb testing.TB, do Do, ip netip.Addr) netip.AddrPort {
	tb.Helper()
	var ln net.Listener
	if err := do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(ip, 0).String())
		return err
	}); err != nil {
		tb.Fatalf("listen tcp on %s: %v", ip, err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(ioTimeout))
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

// TCPRoundTrip connects from inside the namespace to to, sends payload,
// reads it back and returns the connection's path MTU (IP_MTU).
func TCPRoundTrip(do Do, to netip.AddrPort, payload []byte) (mtu int, err error) {
	var c *net.TCPConn
	if err := do(func() error {
		d := net.Dialer{Timeout: ioTimeout}
		conn, err := d.Dial("tcp4", to.String())
		if err != nil {
			return err
		}
		c = conn.(*net.TCPConn)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("dial %s: %w", to, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return 0, err
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.CloseWrite()
		}
		errc <- err
	}()
	got, rerr := io.ReadAll(c)
	if werr := <-errc; werr != nil {
		return 0, fmt.Errorf("write to %s: %w", to, werr)
	}
	if rerr != nil {
		return 0, fmt.Errorf("read from %s: %w", to, rerr)
	}
	if !bytes.Equal(got, payload) {
		return 0, fmt.Errorf("echo from %s: got %d bytes back, sent %d (or content differs)", to, len(got), len(payload))
	}
	return sockoptInt(c, unix.IPPROTO_IP, unix.IP_MTU)
}

// StartUDPEcho echoes datagrams on ip (port chosen by the kernel) inside
// the namespace until the test ends.
func StartUDPEcho(tb testing.TB, do Do, ip netip.Addr) netip.AddrPort {
	tb.Helper()
	return StartUDPEchoAt(tb, do, netip.AddrPortFrom(ip, 0))
}

// StartUDPEchoAt is StartUDPEcho on a given port (0: the kernel's choice).
func StartUDPEchoAt(tb testing.TB, do Do, at netip.AddrPort) netip.AddrPort {
	tb.Helper()
	var pc *net.UDPConn
	if err := do(func() (err error) {
		pc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(at))
		return err
	}); err != nil {
		tb.Fatalf("listen udp on %s: %v", at, err)
	}
	done := make(chan struct{})
	tb.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// UDPRoundTripDF sends one datagram of size bytes (IP packet size: payload
// plus 28 bytes of headers) with Don't Fragment set from inside the
// namespace, and waits for the echo. A packet larger than the local MTU
// fails with EMSGSIZE (errors.Is(err, unix.EMSGSIZE)).
func UDPRoundTripDF(do Do, to netip.AddrPort, size int) error {
	const headers = 20 + 8
	var c *net.UDPConn
	if err := do(func() (err error) {
		c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
		return err
	}); err != nil {
		return fmt.Errorf("dial udp %s: %w", to, err)
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set IP_PMTUDISC_DO: %w", serr)
	}
	payload := bytes.Repeat([]byte{0xcb}, size-headers)
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return err
	}
	if _, err := c.Write(payload); err != nil {
		return fmt.Errorf("send %d-byte DF datagram to %s: %w", size, to, err)
	}
	buf := make([]byte, 65536)
	n, err := c.Read(buf)
	if err != nil {
		return fmt.Errorf("echo of %d-byte DF datagram from %s: %w", size, to, err)
	}
	if n != len(payload) {
		return fmt.Errorf("echo of %d-byte DF datagram from %s: got %d payload bytes", size, to, n)
	}
	return nil
}

func sockoptInt(c interface {
	SyscallConn() (syscall.RawConn, error)
}, level, opt int) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, fmt.Errorf("getsockopt %d/%d: %w", level, opt, serr)
	}
	return v, nil
}
