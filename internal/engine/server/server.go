package server

import (
	"bufio"
	"container/list"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// Server is the engine's server side: it accepts control connections and
// runs the data plane of each session's test. It serves many sessions at
// once within Limits; a session that disconnects, stalls or misbehaves is
// torn down without affecting the others.
type Server struct {
	Logger *slog.Logger
	// Limits bound sessions, flows, buffers and idle time; set before
	// Serve. Zero fields take DefaultLimits.
	Limits Limits

	lim        Limits
	setupOnce  sync.Once
	budget     budget
	sessions   atomic.Int64 // sessions past their hello
	conns      atomic.Int64 // open control connections
	maxInWin   atomic.Int64 // max sessions seen while some window is open
	wg         sync.WaitGroup
	mu         sync.Mutex
	open       map[net.Conn]struct{}
	pending    *list.List // connections before their hello, oldest first
	shutdownCh chan struct{}
}

// NewServer returns a server logging to logger, with DefaultLimits.
func NewServer(logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{Logger: logger, open: map[net.Conn]struct{}{}, pending: list.New(), shutdownCh: make(chan struct{})}
}

// setup fixes the limits on first use: Serve and ServeService may run side
// by side and then share one budget of flows and buffers.
func (s *Server) setup() {
	s.setupOnce.Do(func() {
		s.lim = s.Limits.withDefaults()
		s.budget.lim = s.lim
	})
}

// Serve accepts control connections on ln until ctx is cancelled, then
// closes ln, ends every session and waits for their data planes to stop.
// Temporary accept failures (out of file descriptors) are retried.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.setup()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	backoff := time.Duration(0)
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			if ctx.Err() == nil && isTemporaryAccept(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.Logger.Warn("accept failed; retrying", "err", err, "in", backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
				if ctx.Err() != nil {
					break
				}
				continue
			}
			break
		}
		backoff = 0
		el := s.track(c)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.session(ctx, c, el)
			s.untrack(c, el)
		}()
	}
	// Stop every session.
	s.mu.Lock()
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("accept control connection: %w", err)
}

// isTemporaryAccept reports accept errors that pass: out of file
// descriptors or memory, or a connection aborted before accept.
func isTemporaryAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EINTR)
}

// track registers a new connection as pending its hello; when MaxPending
// connections already wait, the oldest is closed to make room, so a flood
// of silent connections cannot lock well-behaved clients out.
func (s *Server) track(c net.Conn) *list.Element {
	s.conns.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open[c] = struct{}{}
	for s.pending.Len() >= s.lim.MaxPending {
		old := s.pending.Remove(s.pending.Front()).(net.Conn)
		old.Close()
	}
	return s.pending.PushBack(c)
}

// helloDone takes c off the pending list.
func (s *Server) helloDone(el *list.Element) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el.Value != nil {
		s.pending.Remove(el)
		el.Value = nil
	}
}

func (s *Server) untrack(c net.Conn, el *list.Element) {
	s.helloDone(el)
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
	s.conns.Add(-1)
}

// dataPlane is the server side of one test.
type dataPlane interface {
	Port() int
	Counters() window.SrvCounters
	Close()
}

// session serves one control connection.
func (s *Server) session(ctx context.Context, c net.Conn, el *list.Element) {
	log := s.Logger.With("peer", c.RemoteAddr().String())
	defer c.Close()
	defer func() {
		if r := recover(); r != nil {
			log.Error("session crashed; closing it", "panic", r)
		}
	}()
	r := bufio.NewReader(c)
	reply := func(m *engine.Msg) error {
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return engine.WriteMsg(c, m)
	}
	admitted := false
	fail := func(err error) {
		m := &engine.Msg{Type: engine.MsgError, Error: err.Error()}
		var rf *refusal
		if errors.As(err, &rf) {
			m.Code = rf.code
		}
		// Before the hello anyone can connect: keep their noise out of
		// the log unless asked for.
		lvl := slog.LevelDebug
		if admitted {
			lvl = slog.LevelWarn
		}
		log.Log(ctx, lvl, "closing session", "reason", m.Error)
		_ = reply(m)
	}

	// Hello first, within a deadline so idle garbage cannot hold a slot.
	_ = c.SetReadDeadline(time.Now().Add(s.lim.HelloTimeout))
	m, err := engine.ReadMsg(r)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			fail(fmt.Errorf("bad hello: %w", err))
		}
		return
	}
	s.helloDone(el)
	if m.Type != engine.MsgHello {
		fail(fmt.Errorf("expected hello, got %s", m.Type))
		return
	}
	h := m.Hello
	if err := engine.CheckHello(h); err != nil {
		fail(err)
		return
	}
	if err := checkToken(s.lim.Token, h.Token); err != nil {
		fail(err)
		return
	}
	n := s.sessions.Add(1)
	defer s.sessions.Add(-1)
	if n > int64(s.lim.MaxSessions) {
		fail(refusef(engine.CodeRefused, "the server already runs %d sessions, its maximum (cnibench serve --max-sessions)", s.lim.MaxSessions))
		return
	}
	var held cost
	defer func() { s.budget.release(held) }()
	if h.Reserve != nil {
		if err := engine.ValidateSetup(h.Reserve); err != nil {
			fail(fmt.Errorf("bad reservation: %w", err))
			return
		}
		if held, err = s.budget.grow(held, setupCost(h.Reserve)); err != nil {
			fail(err)
			return
		}
	}
	admitted = true
	log.Debug("session open", "sessions", n, "hello", *h)
	if err := reply(&engine.Msg{Type: engine.MsgHello, Hello: &engine.Hello{Proto: engine.ProtoMagic, Version: engine.ProtoVersion, Tool: "cnibench"}}); err != nil {
		return
	}
	// While a test is set up the client may stay silent for the window it
	// declared; otherwise for IdleTimeout.
	declared := min(time.Duration(h.WindowMillis)*time.Millisecond, s.lim.MaxWindow)

	local := addrOf(c.LocalAddr())
	cookie := newCookie()
	var dp dataPlane
	defer func() {
		if dp != nil {
			dp.Close()
		}
	}()
	var win srvWindow // the measured window (window.go)
	for {
		idle := s.lim.IdleTimeout
		if dp != nil {
			idle += declared
		}
		_ = c.SetReadDeadline(time.Now().Add(idle))
		m, err := engine.ReadMsg(r)
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				fail(fmt.Errorf("no control message for %v (cnibench serve --idle-timeout)", idle))
			case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed):
				fail(err)
			}
			return
		}
		switch m.Type {
		case engine.MsgSetup:
			if dp != nil {
				dp.Close()
				dp = nil
			}
			if err := engine.ValidateSetup(m.Setup); err != nil {
				fail(fmt.Errorf("bad setup: %w", err))
				return
			}
			if held, err = s.budget.grow(held, setupCost(m.Setup)); err != nil {
				fail(err)
				return
			}
			si := sessionInfo{Local: local, Peer: addrOf(c.RemoteAddr()), Cookie: cookie, Idle: s.lim.IdleTimeout}
			dp, err = newDataPlane(ctx, si, m.Setup, log)
			if err != nil {
				fail(fmt.Errorf("set up %s: %w", m.Setup.Test, err))
				return
			}
			if err := reply(&engine.Msg{Type: engine.MsgReady, Ready: &engine.Ready{Port: dp.Port(), Cookie: cookie}}); err != nil {
				return
			}
		case engine.MsgStart:
			if dp == nil {
				fail(errors.New("start before setup"))
				return
			}
			win.start(dp, s.sessions.Load())
			if err := reply(&engine.Msg{Type: engine.MsgStarted}); err != nil {
				return
			}
		case engine.MsgStop:
			if dp == nil || !win.open {
				fail(errors.New("stop without start"))
				return
			}
			st := win.stop(dp, s.sessions.Load())
			if err := reply(&engine.Msg{Type: engine.MsgStats, Stats: st}); err != nil {
				return
			}
		case engine.MsgTeardown:
			if dp != nil {
				dp.Close()
				dp = nil
			}
			if err := reply(&engine.Msg{Type: engine.MsgDone}); err != nil {
				return
			}
		default:
			fail(fmt.Errorf("unexpected %s message", m.Type))
			return
		}
	}
}

// newCookie returns a random non-zero session cookie.
func newCookie() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux
		}
		if c := binary.LittleEndian.Uint64(b[:]); c != 0 {
			return c
		}
	}
}

func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap().WithZone(ta.Zone)
		}
	}
	return netip.IPv4Unspecified()
}

// sessionInfo is what a data plane knows of the session that opened it:
// the control peer's address (data traffic from elsewhere is refused) and
// the session's cookie (carried by every data connection and datagram).
type sessionInfo struct {
	Local  netip.Addr // the server's address on the control connection
	Peer   netip.Addr // the control peer's address
	Cookie uint64
	// Idle bounds silence on a data connection (Limits.IdleTimeout).
	Idle time.Duration
}

// noDataPlane is the server side of icmp_echo: the server's kernel
// answers the echo requests, so there is nothing to run or count.
type noDataPlane struct{}

func (noDataPlane) Port() int                    { return 0 }
func (noDataPlane) Counters() window.SrvCounters { return window.SrvCounters{} }
func (noDataPlane) Close()                       {}

func newDataPlane(ctx context.Context, si sessionInfo, s *engine.Setup, log *slog.Logger) (dataPlane, error) {
	ip := si.Local
	timeout := time.Duration(s.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	switch s.Test {
	case engine.TCPStream, engine.TCPRR, engine.TCPCRR:
		return newTCPServer(si, s, timeout, log)
	case engine.UDPStream, engine.UDPRR:
		return newUDPServer(ip, si, s, timeout, log)
	case engine.HTTP:
		return newHTTPServer(ctx, si, s, log)
	case engine.ICMPEcho:
		// The kernel answers echo requests: only the control session runs.
		return noDataPlane{}, nil
	}
	return nil, fmt.Errorf("unknown test %q", s.Test)
}
