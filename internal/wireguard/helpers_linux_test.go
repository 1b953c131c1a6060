package wireguard

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// udpSockets counts the UDP sockets bound to port in the namespace do runs
// in, from /proc/thread-self/net/udp{,6} read on a thread inside it.
func udpSockets(t *testing.T, do DoFunc, port int) int {
	t.Helper()
	n := 0
	if err := do(func() error {
		for _, f := range []string{"udp", "udp6"} {
			c, err := countPort(filepath.Join("/proc/thread-self/net", f), port)
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func countPort(path string, port int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && strings.HasSuffix(fields[1], want) {
			n++
		}
	}
	return n, sc.Err()
}

// capture records every frame an AF_PACKET socket, opened inside the
// namespace and bound to one interface, sees in both directions.
type capture struct {
	fd      int
	done    chan struct{}
	mu      sync.Mutex
	stopped bool
	frames  [][]byte
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func startCapture(t *testing.T, do DoFunc, ifindex int) *capture {
	t.Helper()
	c := &capture{fd: -1, done: make(chan struct{})}
	if err := do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		c.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
			return fmt.Errorf("bind AF_PACKET socket to ifindex %d: %w", ifindex, err)
		}
		tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}); err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop() })
	go func() {
		defer close(c.done)
		buf := make([]byte, 256<<10)
		for {
			c.mu.Lock()
			stopped := c.stopped
			c.mu.Unlock()
			if stopped {
				return
			}
			n, _, err := unix.Recvfrom(c.fd, buf, 0)
			if err != nil {
				if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			c.mu.Lock()
			c.frames = append(c.frames, bytes.Clone(buf[:n]))
			c.mu.Unlock()
		}
	}()
	return c
}

// stop ends the capture (after the frames in flight have arrived) and
// returns the frames.
func (c *capture) stop() [][]byte {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		<-c.done
		return c.frames
	}
	c.mu.Unlock()
	time.Sleep(100 * time.Millisecond) // let the last frames in
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	<-c.done
	unix.Close(c.fd)
	return c.frames
}

func anyContains(frames [][]byte, marker []byte) bool {
	for _, f := range frames {
		if bytes.Contains(f, marker) {
			return true
		}
	}
	return false
}

// wireGuardMessages counts the IPv4 UDP frames to or from port by
// WireGuard message type (1 initiation, 2 response, 3 cookie, 4 data; a
// GSO batch counts once), and the other frames.
func wireGuardMessages(frames [][]byte, port int) (byType [5]int, others int) {
	for _, f := range frames {
		if len(f) < 14+20+8+4 || binary.BigEndian.Uint16(f[12:14]) != unix.ETH_P_IP {
			others++
			continue
		}
		ip := f[14:]
		ihl := int(ip[0]&0x0f) * 4
		if ip[9] != unix.IPPROTO_UDP || len(ip) < ihl+8+4 {
			others++
			continue
		}
		udp := ip[ihl:]
		sport, dport := int(binary.BigEndian.Uint16(udp[0:2])), int(binary.BigEndian.Uint16(udp[2:4]))
		typ := int(udp[8])
		if (sport != port && dport != port) || typ < 1 || typ > 4 {
			others++
			continue
		}
		byType[typ]++
	}
	return byType, others
}

// ping sends one ICMP echo request to dst from inside the namespace and
// waits for the reply.
func ping(do DoFunc, dst netip.Addr) error {
	var c net.PacketConn
	if err := do(func() (err error) {
		c, err = net.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	}); err != nil {
		return fmt.Errorf("icmp socket: %w", err)
	}
	defer c.Close()
	const id, seq = 0x6367, 1
	msg := []byte{8, 0, 0, 0, id >> 8, id & 0xff, 0, seq, 'c', 'n', 'i', 'b', 'e', 'n', 'c', 'h'}
	binary.BigEndian.PutUint16(msg[2:], icmpChecksum(msg))
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := c.WriteTo(msg, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
		return fmt.Errorf("send echo request: %w", err)
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("wait for echo reply: %w", err)
		}
		r := buf[:n]
		if from.String() == dst.String() && n >= 8 && r[0] == 0 && binary.BigEndian.Uint16(r[4:6]) == id {
			return nil
		}
	}
}

func icmpChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// tcpCopy streams data for about d from a client in doClient's namespace
// to a server on ip in doServer's, and returns what the server received
// per second (bits).
func tcpCopy(doServer, doClient DoFunc, ip netip.Addr, d time.Duration) (float64, error) {
	var ln net.Listener
	if err := doServer(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(ip, 0).String())
		return err
	}); err != nil {
		return 0, err
	}
	defer ln.Close()
	type result struct {
		n   int64
		d   time.Duration
		err error
	}
	resc := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			resc <- result{err: err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(d + 10*time.Second))
		start := time.Now()
		n, err := io.Copy(io.Discard, c)
		resc <- result{n, time.Since(start), err}
	}()
	var c net.Conn
	if err := doClient(func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		return 0, err
	}
	buf := make([]byte, 128<<10)
	end := time.Now().Add(d)
	_ = c.SetDeadline(end.Add(10 * time.Second))
	for time.Now().Before(end) {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, err
		}
	}
	c.Close()
	select {
	case r := <-resc:
		if r.err != nil {
			return 0, r.err
		}
		return float64(r.n*8) / r.d.Seconds(), nil
	case <-time.After(15 * time.Second):
		return 0, errors.New("server did not finish")
	}
}

// checkNothingLeft fails the test if this process still has a TUN device
// open, or a descriptor or thread in one of the test's namespaces (which
// then could not disappear).
func checkNothingLeft(t *testing.T, nsIno [2]uint64) {
	t.Helper()
	var want []string
	for _, ino := range nsIno {
		if ino != 0 {
			want = append(want, fmt.Sprintf("net:[%d]", ino))
		}
	}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, p := range append(fds, tasks...) {
		l, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if l == tunPath {
			t.Errorf("%s still open (%s)", tunPath, p)
		}
		for _, w := range want {
			if l == w {
				t.Errorf("test namespace %s still referenced by %s", w, p)
			}
		}
	}
}
