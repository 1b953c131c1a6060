package engine

import (
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
	// The accept timeout only makes idle workers look at the closed flag.
	if err := setRcvTimeout(lfd, 500*time.Millisecond); err != nil {
		closeFD(lfd)
		return nil, err
	}
	ts := &tcpServer{lfd: lfd, port: port, setup: *s, log: log, conns: map[int]struct{}{}}
	workers := s.Flows
	if s.Test == TCPCRR && workers < 2 {
		// A spare acceptor overlaps accept with the previous connection's close.
		workers = 2
	}
	for i := 0; i < workers; i++ {
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
	for !ts.closed.Load() {
		fd, _, err := unix.Accept4(ts.lfd, unix.SOCK_CLOEXEC)
		if err != nil {
			if err == unix.EINTR || errTimeout(err) || err == unix.ECONNABORTED {
				continue
			}
			if !ts.closed.Load() {
				ts.log.Debug("accept failed", "err", err)
			}
			return
		}
		ts.mu.Lock()
		if ts.closed.Load() {
			ts.mu.Unlock()
			closeFD(fd)
			return
		}
		ts.conns[fd] = struct{}{}
		ts.mu.Unlock()
		_ = setRcvTimeout(fd, 500*time.Millisecond)
		if ts.setup.Test != TCPStream {
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		}
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

// sink reads a stream until the peer closes it.
func (ts *tcpServer) sink(fd int, buf []byte) {
	for {
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
	for {
		if err := ts.readReq(fd, req); err != nil {
			return
		}
		if err := writeFull(fd, resp, false); err != nil {
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
