package engine

import (
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// tcpServer is the server side of tcp_stream, tcp_rr and tcp_crr: a pool of
// workers, one per flow, each on its own OS thread, doing blocking
// accept → serve the connection until the peer closes → accept again, as
// netperf's netserver does.
type tcpServer struct {
	lfd    int
	port   int
	setup  Setup
	log    *slog.Logger
	closed atomic.Bool
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[int]struct{}

	rxBytes atomic.Uint64
	trans   atomic.Uint64
}

func newTCPServer(ip netip.Addr, s *Setup, timeout time.Duration, log *slog.Logger) (*tcpServer, error) {
	lfd, port, err := listenTCP(ip, 4096)
	if err != nil {
		return nil, err
	}
	// Options set on the listener are inherited by the sockets it accepts,
	// which saves system calls per connection (tcp_crr): the receive timeout
	// only makes idle workers look at the closed flag, and rr/crr answer
	// without Nagle delays.
	if err := setRcvTimeout(lfd, 500*time.Millisecond); err != nil {
		closeFD(lfd)
		return nil, err
	}
	if s.Test != TCPStream {
		if err := unix.SetsockoptInt(lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			closeFD(lfd)
			return nil, fmt.Errorf("set TCP_NODELAY: %w", err)
		}
	}
	ts := &tcpServer{lfd: lfd, port: port, setup: *s, log: log, conns: map[int]struct{}{}}
	reserveThreads(s.Flows)
	for i := 0; i < s.Flows; i++ {
		ts.wg.Add(1)
		go ts.worker(timeout)
	}
	return ts, nil
}

func (ts *tcpServer) Port() int { return ts.port }

func (ts *tcpServer) Counters() srvCounters {
	return srvCounters{RxBytes: ts.rxBytes.Load(), Trans: ts.trans.Load()}
}

func (ts *tcpServer) Close() {
	if ts.closed.Swap(true) {
		return
	}
	defer releaseThreads(ts.setup.Flows)
	shutdownFD(ts.lfd)
	ts.mu.Lock()
	for fd := range ts.conns {
		shutdownFD(fd)
	}
	ts.mu.Unlock()
	ts.wg.Wait()
	closeFD(ts.lfd)
}

func (ts *tcpServer) worker(timeout time.Duration) {
	defer ts.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bufSize := ts.setup.ReqSize
	if ts.setup.Test == TCPStream {
		bufSize = ts.setup.MsgSize
		if bufSize < 256<<10 {
			bufSize = 256 << 10
		}
	}
	buf := make([]byte, bufSize)
	resp := make([]byte, ts.setup.RespSize)
	var y yielder
	for !ts.closed.Load() {
		y.yield()
		fd, err := accept(ts.lfd)
		if err != nil {
			if err == unix.EINTR || errTimeout(err) || err == unix.ECONNABORTED {
				continue
			}
			if !ts.closed.Load() {
				ts.log.Debug("accept failed", "err", err)
			}
			return
		}
		if ts.setup.Test == TCPCRR {
			// One transaction, then the server closes first, as netperf's
			// netserver does in TCP_CRR: TIME_WAIT stays on the server and
			// the client never runs out of ephemeral ports. Short-lived
			// connections are not tracked: the receive timeout bounds them.
			if ts.readReq(fd, buf) == nil && writeSmall(fd, resp) == nil {
				ts.trans.Add(1)
			}
			closeFD(fd)
			continue
		}
		ts.mu.Lock()
		if ts.closed.Load() {
			ts.mu.Unlock()
			closeFD(fd)
			return
		}
		ts.conns[fd] = struct{}{}
		ts.mu.Unlock()
		switch ts.setup.Test {
		case TCPStream:
			ts.sink(fd, buf)
		default:
			ts.respond(fd, buf, resp)
		}
		ts.mu.Lock()
		delete(ts.conns, fd)
		ts.mu.Unlock()
		closeFD(fd)
	}
}

// accept accepts a connection without asking for the peer's address (one
// system call: unix.Accept4 also queries the socket's protocol).
func accept(lfd int) (int, error) {
	fd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(lfd), 0, 0, unix.SOCK_CLOEXEC, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// sink reads a stream until the peer closes it.
func (ts *tcpServer) sink(fd int, buf []byte) {
	var y yielder
	for {
		y.yield()
		n, err := unix.Read(fd, buf)
		if err != nil {
			if err == unix.EINTR || (errTimeout(err) && !ts.closed.Load()) {
				continue
			}
			return
		}
		if n == 0 {
			return
		}
		ts.rxBytes.Add(uint64(n))
	}
}

// respond answers requests until the peer closes the connection.
func (ts *tcpServer) respond(fd int, req, resp []byte) {
	var y yielder
	for {
		y.yield()
		if err := ts.readReq(fd, req); err != nil {
			return
		}
		if err := writeSmall(fd, resp); err != nil {
			return
		}
		ts.trans.Add(1)
	}
}

// readReq reads one request; idle timeouts only matter once the server closes.
func (ts *tcpServer) readReq(fd int, req []byte) error {
	for off := 0; off < len(req); {
		n, err := unix.Read(fd, req[off:])
		if err != nil {
			if err == unix.EINTR || (errTimeout(err) && !ts.closed.Load()) {
				continue
			}
			return err
		}
		if n == 0 {
			return errEOF
		}
		off += n
	}
	ts.rxBytes.Add(uint64(len(req)))
	return nil
}
