package client

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine/httpmsg"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

// The http test's client on Linux, as wrk does it: a few OS threads, each
// owning an epoll instance and a share of the concurrent clients as
// non-blocking connection state machines (connect → write the request →
// read and parse the response → close or reuse → again). A client costs
// no goroutine, no netpoller round trip and no scheduler hand-off per
// request; the system calls on non-blocking sockets, which cannot block,
// are raw (no scheduler bookkeeping). Only epoll_wait blocks, as an
// ordinary system call, so garbage collection never waits for a thread.
// Timing, counters, errors and the measured window are those of the
// goroutine client (httpclient.go), which still serves --rate runs.

// epollTick bounds how long a thread sleeps in epoll_wait: the stop flag
// and the deadlines are checked at least this often.
const epollTick = 10 * time.Millisecond

// httpThreads is how many epoll threads serve flows clients: one per CPU
// this process may run on, at most one per client.
func httpThreads(flows int) int {
	n := runtime.NumCPU()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 {
		n = set.Count()
	}
	if n > flows {
		n = flows
	}
	if n < 1 {
		n = 1
	}
	return n
}

// startHTTPEpoll starts the epoll client and reports true, or reports false
// (the caller then starts the goroutine client): with --rate, whose pacing
// only the goroutine client does, or for an address it cannot parse.
func (w *workload) startHTTPEpoll(addrs []string, req []byte) bool {
	if w.cfg.Rate > 0 {
		return false
	}
	var sas []*rawSA
	for _, addr := range addrs {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return false
		}
		sa, err := rawSockaddr(ap.Addr(), int(ap.Port()))
		if err != nil {
			return false
		}
		sas = append(sas, sa)
	}
	n := httpThreads(w.cfg.Flows)
	sock.ReserveThreads(n)
	w.threads = n
	for t := 0; t < n; t++ {
		var flows []int
		for i := t; i < w.cfg.Flows; i += n {
			flows = append(flows, i)
		}
		l := &epollLoop{w: w, sas: sas, req: req, flows: flows, next: t}
		w.wg.Add(1)
		go l.run()
	}
	return true
}

// rawSA is a socket address as connect(2) takes it.
type rawSA struct {
	family int
	buf    [unix.SizeofSockaddrInet6]byte
	len    uintptr
}

func rawSockaddr(ip netip.Addr, port int) (*rawSA, error) {
	r := &rawSA{}
	if ip.Is4() || ip.Is4In6() {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&r.buf[0]))
		sa.Family = unix.AF_INET
		sa.Addr = ip.Unmap().As4()
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		r.family, r.len = unix.AF_INET, unix.SizeofSockaddrInet4
		return r, nil
	}
	if ip.Zone() != "" {
		return nil, errors.New("zoned IPv6 address") // the goroutine client resolves zones
	}
	sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&r.buf[0]))
	sa.Family = unix.AF_INET6
	sa.Addr = ip.As16()
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	r.family, r.len = unix.AF_INET6, unix.SizeofSockaddrInet6
	return r, nil
}

// Raw system calls on non-blocking sockets: none can block.
func rawSocket(family int) (int, error) {
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func rawConnect(fd int, sa *rawSA) error {
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa.buf[0])), sa.len)
	if e != 0 && e != unix.EINPROGRESS {
		return e
	}
	return nil
}

func rawSend(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawRead(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawClose(fd int) { _, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }

// Connection states.
type connState uint8

const (
	csIdle       connState = iota // no socket: connect at the next chance
	csBackoff                     // a connect failed: wait until retryAt
	csConnecting                  // non-blocking connect in progress
	csWriting                     // sending the request (wrote bytes of it)
	csReading                     // reading the response
)

// hconn is one concurrent client of an epoll thread.
type hconn struct {
	flow     int
	fd       int
	gen      uint32 // distinguishes this socket's events from an earlier one's
	state    connState
	wrote    int
	t0       time.Time     // when this request's transaction began (connect, if any)
	ct       time.Duration // connect time of this transaction (0 when reused)
	deadline time.Time     // connect or exchange deadline (--timeout)
	retryAt  time.Time
	p        httpmsg.Parser
	buf      [httpmsg.LineBuf]byte
	r, n     int // unconsumed bytes are buf[r:n]
}

// epollLoop is one epoll thread and its clients.
type epollLoop struct {
	w *workload
	// sas are the destinations, taken in turn by new connections.
	sas   []*rawSA
	next  int
	req   []byte
	flows []int
	ep    int
	conns []*hconn
	// backoff counts clients in csBackoff (epoll_wait then wakes for them).
	backoff  int
	lastScan time.Time
}

func (l *epollLoop) run() {
	defer l.w.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		for _, f := range l.flows {
			l.w.fail(f, fmt.Errorf("http client: epoll_create1: %w", err))
		}
		return
	}
	l.ep = ep
	defer unix.Close(ep)
	l.conns = make([]*hconn, len(l.flows))
	for k, f := range l.flows {
		l.conns[k] = &hconn{flow: f, fd: -1}
	}
	defer func() {
		for _, c := range l.conns {
			if c.fd >= 0 {
				rawClose(c.fd)
				c.fd = -1
			}
		}
	}()
	now := time.Now()
	l.lastScan = now
	for k := range l.conns {
		if l.w.stop.Load() {
			return
		}
		l.connect(k, now)
	}
	events := make([]unix.EpollEvent, 256)
	var y sock.Yielder
	for !l.w.stop.Load() {
		timeout := int(epollTick / time.Millisecond)
		if l.backoff > 0 {
			timeout = 1
		}
		n, err := unix.EpollWait(l.ep, events, timeout)
		if err != nil && err != unix.EINTR {
			for _, f := range l.flows {
				l.w.fail(f, fmt.Errorf("http client: epoll_wait: %w", err))
			}
			return
		}
		for i := 0; i < n && !l.w.stop.Load(); i++ {
			ev := &events[i]
			k := int(ev.Fd)
			if k < 0 || k >= len(l.conns) || l.conns[k].gen != uint32(ev.Pad) || l.conns[k].fd < 0 {
				continue // an event of a socket closed earlier in this batch
			}
			l.handle(k, ev.Events)
		}
		now := time.Now()
		if l.backoff > 0 || now.Sub(l.lastScan) >= epollTick {
			l.scan(now)
		}
		y.Yield()
	}
}

// scan retries backed-off connects and fails clients past their deadline.
func (l *epollLoop) scan(now time.Time) {
	l.lastScan = now
	for k, c := range l.conns {
		switch {
		case c.state == csBackoff && !now.Before(c.retryAt):
			l.backoff--
			c.state = csIdle
			l.connect(k, now)
		case c.fd >= 0 && now.After(c.deadline):
			what := "http read response"
			switch {
			case c.state == csConnecting:
				what = "http connect"
			case c.state == csWriting:
				what = "http send request"
			case c.p.InBody():
				what = "http read body"
			}
			l.fail(k, fmt.Errorf("%s: %w", what, os.ErrDeadlineExceeded))
		}
	}
}

// connect opens a new connection for client k and starts a transaction.
func (l *epollLoop) connect(k int, now time.Time) {
	c := l.conns[k]
	c.t0, c.ct = now, 0
	sa := l.sas[l.next%len(l.sas)]
	l.next++
	fd, err := rawSocket(sa.family)
	if err == nil {
		if err = rawConnect(fd, sa); err != nil {
			rawClose(fd)
		}
	}
	if err != nil {
		l.connectFailed(k, err, now)
		return
	}
	c.gen++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(k), Pad: int32(c.gen)}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		rawClose(fd)
		l.connectFailed(k, fmt.Errorf("epoll_ctl: %w", err), now)
		return
	}
	c.fd, c.state, c.deadline = fd, csConnecting, now.Add(l.w.cfg.Timeout)
	c.r, c.n = 0, 0
	c.p.Reset()
}

// connectFailed counts a failed connect; the client retries after 1 ms, as
// the goroutine client does.
func (l *epollLoop) connectFailed(k int, err error, now time.Time) {
	c := l.conns[k]
	l.w.fail(c.flow, fmt.Errorf("http connect: %w", os.NewSyscallError("connect", err)))
	c.state, c.retryAt = csBackoff, now.Add(time.Millisecond)
	l.backoff++
}

// closeConn closes client k's socket; it reconnects when next needed.
func (l *epollLoop) closeConn(k int) {
	c := l.conns[k]
	if c.fd >= 0 {
		rawClose(c.fd) // also removes it from the epoll set
		c.fd = -1
	}
	c.state = csIdle
}

// fail closes client k's connection, counts err and starts again.
func (l *epollLoop) fail(k int, err error) {
	c := l.conns[k]
	l.closeConn(k)
	l.w.fail(c.flow, err)
	if !l.w.stop.Load() {
		l.connect(k, time.Now())
	}
}

// handle advances client k on an epoll event.
func (l *epollLoop) handle(k int, events uint32) {
	c := l.conns[k]
	if c.state == csConnecting {
		if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			err := error(unix.ECONNREFUSED)
			if e, gerr := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); gerr == nil && e != 0 {
				err = syscall.Errno(e)
			}
			l.closeConn(k)
			l.connectFailed(k, err, time.Now())
			return
		}
		if events&unix.EPOLLOUT == 0 {
			return
		}
		now := time.Now()
		c.ct = now.Sub(c.t0)
		c.state, c.wrote, c.deadline = csWriting, 0, now.Add(l.w.cfg.Timeout)
	}
	if c.state == csWriting {
		if !l.write(k) {
			return
		}
		if c.n == c.r && events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
			return // the response's arrival is a new edge
		}
	}
	if c.state == csReading {
		l.read(k)
	}
}

// write sends the rest of the request; it reports whether it was all sent.
func (l *epollLoop) write(k int) bool {
	c := l.conns[k]
	for c.wrote < len(l.req) {
		n, err := rawSend(c.fd, l.req[c.wrote:])
		if err == unix.EAGAIN {
			return false // wait for EPOLLOUT
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			l.fail(k, fmt.Errorf("http send request: %w", os.NewSyscallError("write", err)))
			return false
		}
		c.wrote += n
	}
	c.state = csReading
	return true
}

// read reads and parses until the response is complete or the socket is
// drained.
func (l *epollLoop) read(k int) {
	c := l.conns[k]
	for {
		// Bytes left over (an incomplete line, or what followed the
		// previous response on a kept-alive connection) come first.
		if c.n > c.r {
			used, err := c.p.Feed(c.buf[c.r:c.n])
			c.r += used
			if err != nil {
				l.fail(k, l.readErr(c, err))
				return
			}
			if c.p.Done() {
				l.complete(k)
				return
			}
		}
		if c.r == c.n {
			c.r, c.n = 0, 0
		} else if c.r > 0 {
			c.n = copy(c.buf[:], c.buf[c.r:c.n])
			c.r = 0
		}
		if c.n == len(c.buf) { // cannot happen: feed fails on a full buffer
			l.fail(k, l.readErr(c, fmt.Errorf("%w: line longer than %d bytes", httpmsg.ErrBadResponse, httpmsg.LineBuf)))
			return
		}
		n, err := rawRead(c.fd, c.buf[c.n:])
		switch {
		case err == unix.EAGAIN:
			return
		case err == unix.EINTR:
			continue
		case err != nil:
			l.fail(k, l.readErr(c, os.NewSyscallError("read", err)))
			return
		case n == 0:
			if err := c.p.EOF(c.n - c.r); err != nil {
				l.fail(k, l.readErr(c, err))
				return
			}
			l.closeConn(k)
			l.complete(k)
			return
		}
		c.n += n
	}
}

func (l *epollLoop) readErr(c *hconn, err error) error {
	if c.p.InBody() {
		return fmt.Errorf("http read body: %w", err)
	}
	return fmt.Errorf("http read response: %w", err)
}

// complete ends client k's transaction as the goroutine client does: the
// connection is closed unless kept alive, a status other than 200 is an
// error, and the latency from the transaction's start (its connect, if
// any) is recorded in the measured phase.
func (l *epollLoop) complete(k int) {
	c := l.conns[k]
	w := l.w
	resp := c.p.Response()
	now := time.Now()
	el := now.Sub(c.t0)
	ct := c.ct
	// A body delimited by the close has closed the connection (c.fd < 0).
	keep := w.cfg.HTTPKeepAlive && !resp.Close && c.fd >= 0
	if !keep {
		l.closeConn(k)
	}
	if resp.Status != 200 {
		w.fail(c.flow, fmt.Errorf("http status %d", resp.Status))
	} else {
		f := &w.flows[c.flow]
		f.trans.Add(1)
		if resp.ContentLength > 0 {
			f.txBytes.Add(uint64(resp.ContentLength))
		}
		if w.measuring() {
			w.lat.record(c.flow, el)
			if w.conn != nil && ct > 0 {
				w.conn.record(c.flow, ct)
			}
		}
	}
	if w.stop.Load() {
		return
	}
	if !keep {
		l.connect(k, now)
		return
	}
	// Next request on the same connection.
	c.p.Reset()
	c.t0, c.ct = now, 0
	c.state, c.wrote, c.deadline = csWriting, 0, now.Add(w.cfg.Timeout)
	if l.write(k) && c.n > c.r {
		l.read(k)
	}
}
