package engine

import (
	"bufio"
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
	"time"
)

// Server is the engine's server side: it accepts control connections and
// runs the data plane of each session's test. It serves any number of
// sessions at once; a session that disconnects or misbehaves is torn down
// without affecting the others.
type Server struct {
	Logger *slog.Logger

	sessions   atomic.Int64
	maxInWin   atomic.Int64 // max sessions seen while some window is open
	wg         sync.WaitGroup
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
	shutdownCh chan struct{}
}

// NewServer returns a server logging to logger.
func NewServer(logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{Logger: logger, conns: map[net.Conn]struct{}{}, shutdownCh: make(chan struct{})}
}

// Serve accepts control connections on ln until ctx is cancelled, then
// closes ln, ends every session and waits for their data planes to stop.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			break
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.session(ctx, c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
	// Stop every session.
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("accept control connection: %w", err)
}

// dataPlane is the server side of one test.
type dataPlane interface {
	Port() int
	Counters() srvCounters
	Close()
}

type srvCounters struct {
	RxBytes, RxDatagrams, Trans uint64
}

// session serves one control connection.
func (s *Server) session(ctx context.Context, c net.Conn) {
	n := s.sessions.Add(1)
	defer s.sessions.Add(-1)
	log := s.Logger.With("peer", c.RemoteAddr().String())
	log.Debug("session open", "sessions", n)
	defer c.Close()
	defer func() {
		if r := recover(); r != nil {
			log.Error("session crashed; closing it", "panic", r)
		}
	}()
	r := bufio.NewReader(c)
	reply := func(m *Msg) error {
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return WriteMsg(c, m)
	}
	fail := func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		log.Warn("closing session", "reason", msg)
		_ = reply(&Msg{Type: MsgError, Error: msg})
	}

	// Hello first, within a deadline so idle garbage cannot hold a slot.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := ReadMsg(r)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			fail("bad hello: %v", err)
		}
		return
	}
	if m.Type != MsgHello {
		fail("expected hello, got %s", m.Type)
		return
	}
	if err := CheckHello(m.Hello); err != nil {
		fail("%v", err)
		return
	}
	if err := reply(&Msg{Type: MsgHello, Hello: &Hello{Proto: ProtoMagic, Version: ProtoVersion, Tool: "cnibench"}}); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})

	local := addrOf(c.LocalAddr())
	cookie := newCookie()
	var dp dataPlane
	defer func() {
		if dp != nil {
			dp.Close()
		}
	}()
	var win struct {
		open  bool
		t0    time.Time
		cpu0  procCPU
		cnt0  srvCounters
		peakN int64
	}
	for {
		m, err := ReadMsg(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fail("%v", err)
			}
			return
		}
		switch m.Type {
		case MsgSetup:
			if dp != nil {
				dp.Close()
				dp = nil
			}
			if err := ValidateSetup(m.Setup); err != nil {
				fail("bad setup: %v", err)
				return
			}
			dp, err = newDataPlane(ctx, sessionInfo{Local: local, Peer: addrOf(c.RemoteAddr()), Cookie: cookie}, m.Setup, log)
			if err != nil {
				fail("set up %s: %v", m.Setup.Test, err)
				return
			}
			if err := reply(&Msg{Type: MsgReady, Ready: &Ready{Port: dp.Port(), Cookie: cookie}}); err != nil {
				return
			}
		case MsgStart:
			if dp == nil {
				fail("start before setup")
				return
			}
			win.open, win.t0, win.cpu0, win.cnt0, win.peakN = true, time.Now(), readProcCPU(), dp.Counters(), s.sessions.Load()
			if err := reply(&Msg{Type: MsgStarted}); err != nil {
				return
			}
		case MsgStop:
			if dp == nil || !win.open {
				fail("stop without start")
				return
			}
			t1, cpu1, cnt1 := time.Now(), readProcCPU(), dp.Counters()
			if n := s.sessions.Load(); n > win.peakN {
				win.peakN = n
			}
			win.open = false
			st := &SrvStats{
				WallMicros:   t1.Sub(win.t0).Microseconds(),
				CPUUserMicro: (cpu1.User - win.cpu0.User).Microseconds(),
				CPUSysMicro:  (cpu1.Sys - win.cpu0.Sys).Microseconds(),
				RxBytes:      cnt1.RxBytes - win.cnt0.RxBytes,
				RxDatagrams:  cnt1.RxDatagrams - win.cnt0.RxDatagrams,
				Trans:        cnt1.Trans - win.cnt0.Trans,
				Sessions:     int(win.peakN),
			}
			if err := reply(&Msg{Type: MsgStats, Stats: st}); err != nil {
				return
			}
		case MsgTeardown:
			if dp != nil {
				dp.Close()
				dp = nil
			}
			if err := reply(&Msg{Type: MsgDone}); err != nil {
				return
			}
		default:
			fail("unexpected %s message", m.Type)
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
}

func newDataPlane(ctx context.Context, si sessionInfo, s *Setup, log *slog.Logger) (dataPlane, error) {
	ip := si.Local
	timeout := time.Duration(s.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	switch s.Test {
	case TCPStream, TCPRR, TCPCRR:
		return newTCPServer(ip, s, timeout, log)
	case UDPStream, UDPRR:
		return newUDPServer(ip, si, s, timeout, log)
	case HTTP:
		return newHTTPServer(ctx, ip, s, log)
	}
	return nil, fmt.Errorf("unknown test %q", s.Test)
}
