package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/sock"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// tcpServer is the server side of tcp_stream, tcp_rr and tcp_crr: a pool of
// workers, one per flow, each on its own OS thread, doing blocking
// accept → serve the connection until the peer closes → accept again, as
// netperf's netserver does.
type tcpServer struct {
	lfd       int
	port      int
	setup     engine.Setup
	log       *slog.Logger
	peer      netip.Addr // data connections are accepted from this address only
	idleTicks int        // ticks without progress after which a connection is dropped
	closed    atomic.Bool
	wg        sync.WaitGroup

	mu    sync.Mutex
	conns map[int]struct{}

	rxBytes atomic.Uint64
	trans   atomic.Uint64
	refused atomic.Uint64 // connections from other addresses than the peer's
}

// tick is the socket timeout of the data plane's blocking calls: how often
// a blocked worker looks at the closed flag and counts idle time.
const tick = 500 * time.Millisecond

func newTCPServer(si sessionInfo, s *engine.Setup, timeout time.Duration, log *slog.Logger) (*tcpServer, error) {
	lfd, port, err := sock.ListenTCP(si.Local, 4096)
	if err != nil {
		return nil, err
	}
	// Options set on the listener are inherited by the sockets it accepts,
	// which saves system calls per connection (tcp_crr): the receive and
	// send timeouts only make blocked workers look at the closed flag and
	// count idle time (a peer that neither sends nor reads is dropped after
	// si.Idle), and rr/crr answer without Nagle delays.
	if err := sock.SetTimeouts(lfd, tick); err != nil {
		sock.Close(lfd)
		return nil, err
	}
	if s.Test != engine.TCPStream {
		if err := unix.SetsockoptInt(lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			sock.Close(lfd)
			return nil, fmt.Errorf("set TCP_NODELAY: %w", err)
		}
	}
	idle := si.Idle
	if idle <= 0 {
		idle = DefaultLimits().IdleTimeout
	}
	ts := &tcpServer{lfd: lfd, port: port, setup: *s, log: log, conns: map[int]struct{}{},
		peer: si.Peer, idleTicks: int(max(idle/tick, 1))}
	sock.ReserveThreads(s.Flows)
	for i := 0; i < s.Flows; i++ {
		ts.wg.Add(1)
		go ts.worker(timeout)
	}
	return ts, nil
}

func (ts *tcpServer) Port() int { return ts.port }

func (ts *tcpServer) Counters() window.SrvCounters {
	return window.SrvCounters{RxBytes: ts.rxBytes.Load(), Trans: ts.trans.Load()}
}

func (ts *tcpServer) Close() {
	if ts.closed.Swap(true) {
		return
	}
	defer sock.ReleaseThreads(ts.setup.Flows)
	sock.Shutdown(ts.lfd)
	ts.mu.Lock()
	for fd := range ts.conns {
		sock.Shutdown(fd)
	}
	ts.mu.Unlock()
	ts.wg.Wait()
	sock.Close(ts.lfd)
}

func (ts *tcpServer) worker(timeout time.Duration) {
	defer ts.wg.Done()
	// Not locked to its OS thread: see runFlow.
	bufSize := ts.setup.ReqSize
	if ts.setup.Test == engine.TCPStream {
		bufSize = ts.setup.MsgSize
		if bufSize < 256<<10 {
			bufSize = 256 << 10
		}
	}
	buf := make([]byte, bufSize)
	resp := make([]byte, ts.setup.RespSize)
	engine.FillPayload(resp)
	var y sock.Yielder
	for !ts.closed.Load() {
		y.Yield()
		fd, err := accept(ts.lfd, ts.peer)
		if err == errNotPeer {
			if ts.refused.Add(1) == 1 {
				ts.log.Warn("refused a data connection from another address than the session's peer", "peer", ts.peer)
			}
			continue
		}
		if err != nil {
			if err == unix.EINTR || sock.IsTimeout(err) || err == unix.ECONNABORTED {
				continue
			}
			if !ts.closed.Load() {
				ts.log.Debug("accept failed", "err", err)
			}
			return
		}
		if ts.setup.Test == engine.TCPCRR {
			// One transaction, then the server closes first, as netperf's
			// netserver does in TCP_CRR: TIME_WAIT stays on the server and
			// the client never runs out of ephemeral ports. Short-lived
			// connections are not tracked: the receive timeout bounds them.
			if ts.readReq(fd, buf) == nil && ts.write(fd, resp) == nil {
				ts.trans.Add(1)
			}
			sock.Close(fd)
			continue
		}
		ts.mu.Lock()
		if ts.closed.Load() {
			ts.mu.Unlock()
			sock.Close(fd)
			return
		}
		ts.conns[fd] = struct{}{}
		ts.mu.Unlock()
		switch ts.setup.Test {
		case engine.TCPStream:
			ts.sink(fd, buf)
		default:
			ts.respond(fd, buf, resp)
		}
		ts.mu.Lock()
		delete(ts.conns, fd)
		ts.mu.Unlock()
		sock.Close(fd)
	}
}

var errNotPeer = errors.New("connection from another address than the session's peer")

// accept accepts a connection and checks that it comes from peer (the
// control connection's peer): a connection from elsewhere is closed at once
// and errNotPeer returned. The address comes with the accept call itself,
// so the check costs no system call (tcp_crr accepts once per transaction).
func accept(lfd int, peer netip.Addr) (int, error) {
	var rsa unix.RawSockaddrAny
	alen := uint32(unix.SizeofSockaddrAny)
	fd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(lfd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&alen)), unix.SOCK_CLOEXEC, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	if !peer.IsValid() || peer.IsUnspecified() {
		return int(fd), nil
	}
	var from netip.Addr
	switch rsa.Addr.Family {
	case unix.AF_INET:
		from = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(&rsa)).Addr)
	case unix.AF_INET6:
		from = netip.AddrFrom16((*unix.RawSockaddrInet6)(unsafe.Pointer(&rsa)).Addr).Unmap()
	}
	if from != peer.WithZone("") {
		sock.Close(int(fd))
		return -1, errNotPeer
	}
	return int(fd), nil
}

// write sends a response: a non-blocking raw send on the fast path, then,
// if the peer is not reading, blocking writes the scheduler knows about,
// each bounded by the socket's send timeout (tick); a peer that reads
// nothing for idleTicks ticks is dropped.
func (ts *tcpServer) write(fd int, buf []byte) error {
	off, err := sock.SendSmall(fd, buf)
	if err != nil {
		return err
	}
	for waited := 0; off < len(buf); {
		n, err := unix.Write(fd, buf[off:])
		if err != nil {
			if ts.retry(err, &waited) {
				continue
			}
			return err
		}
		waited = 0
		off += n
	}
	return nil
}

// retry reports whether a failed read or write on a data connection is tried
// again: after EINTR, and after a socket timeout while the server runs and the
// peer has been silent for fewer than idleTicks ticks in a row.
func (ts *tcpServer) retry(err error, waited *int) bool {
	if err == unix.EINTR {
		return true
	}
	if sock.IsTimeout(err) && !ts.closed.Load() && *waited < ts.idleTicks {
		*waited++
		return true
	}
	return false
}

// sink reads a stream until the peer closes it.
func (ts *tcpServer) sink(fd int, buf []byte) {
	var y sock.Yielder
	waited := 0
	for {
		y.Yield()
		n, err := sock.RecvBlock(fd, buf)
		if err != nil {
			if ts.retry(err, &waited) {
				continue
			}
			return
		}
		waited = 0
		if n == 0 {
			return
		}
		ts.rxBytes.Add(uint64(n))
	}
}

// respond answers requests until the peer closes the connection.
func (ts *tcpServer) respond(fd int, req, resp []byte) {
	var y sock.Yielder
	for {
		y.Yield()
		if err := ts.readReq(fd, req); err != nil {
			return
		}
		if err := ts.write(fd, resp); err != nil {
			return
		}
		ts.trans.Add(1)
	}
}

// readReq reads one request; it gives up when the server closes or after
// idleTicks ticks without a byte.
func (ts *tcpServer) readReq(fd int, req []byte) error {
	waited := 0
	for off := 0; off < len(req); {
		n, err := sock.RecvBlock(fd, req[off:])
		if err != nil {
			if ts.retry(err, &waited) {
				continue
			}
			return err
		}
		waited = 0
		if n == 0 {
			return sock.ErrEOF
		}
		off += n
	}
	ts.rxBytes.Add(uint64(len(req)))
	return nil
}
