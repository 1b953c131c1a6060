package client

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// tcp_rr_loaded measures tcp_rr's latency while tcp_stream flows load the
// same client→server path in the same window: how much latency the path
// adds under load (the bufferbloat question).
//
// The load runs in a second session to the same server, opened next to
// the rr session for the whole run, rather than in one session serving
// both kinds of data: a session sets up one data plane for one test, so
// the server and the control protocol stay exactly as they are and any
// server that serves tcp_rr and tcp_stream serves tcp_rr_loaded. Both
// load's edges are taken with the rr flows'; its data plane runs from
// before the warm-up until after the window.
//
// What the CPU figures cover: the server's CPU (server_cpu_pct) is its
// process's getrusage over the rr session's window, so it covers both
// data planes, the rr answers and the load's sinks; the client's and the
// hosts' CPU cover the rr flows and the load together as well. The server
// reports two sessions at once, which is expected here and not warned
// about; a third means another client shared the server.

// loadSession is the client's side of tcp_rr_loaded's load: its own
// control session and, per repeat, its tcp_stream flows.
type loadSession struct {
	ct  *control
	cfg engine.Config // the load's tcp_stream configuration
	w   *workload
	in  window.Load
}

// loadConfig is the tcp_stream configuration of cfg's load: LoadFlows
// flows at full speed, writing cfg.MsgSize bytes at a time.
func loadConfig(cfg engine.Config) engine.Config {
	c := cfg
	c.Test, c.Flows, c.LoadFlows = engine.TCPStream, cfg.LoadFlows, 0
	c.Rate, c.BusyPoll = 0, false
	return c
}

// dialLoad opens the load's session.
func dialLoad(ctx context.Context, host string, port int, cfg engine.Config, token string) (*loadSession, error) {
	lc := loadConfig(cfg)
	ct, err := dialControl(ctx, host, port, cfg.Timeout, newHello(lc, token))
	if err != nil {
		return nil, fmt.Errorf("tcp_rr_loaded: open the load's session: %w", err)
	}
	return &loadSession{ct: ct, cfg: lc}, nil
}

func (l *loadSession) close() { l.ct.c.Close() }

// start sets the load's data plane up and opens its flows; end stops them
// and tears the data plane down.
func (l *loadSession) start(ip netip.Addr, timeout time.Duration) error {
	setup := &engine.Setup{Test: engine.TCPStream, Flows: l.cfg.Flows, ReqSize: l.cfg.ReqSize, RespSize: l.cfg.RespSize,
		MsgSize: l.cfg.MsgSize, TimeoutMillis: l.cfg.Timeout.Milliseconds()}
	r, err := l.ct.call(&engine.Msg{Type: engine.MsgSetup, Setup: setup}, engine.MsgReady, timeout)
	if err != nil {
		return fmt.Errorf("%w: load session: %w", errControl, err)
	}
	l.w = newWorkload(l.cfg)
	l.w.cookie = r.Ready.Cookie
	l.in = window.Load{}
	if err := l.w.startFlows(ip, r.Ready.Port); err != nil {
		return fmt.Errorf("open %d tcp_stream load flow(s): %w", l.cfg.Flows, err)
	}
	return nil
}

func (l *loadSession) end(timeout time.Duration) {
	if l.w != nil {
		l.w.halt()
		l.w = nil
	}
	_, _ = l.ct.call(&engine.Msg{Type: engine.MsgTeardown}, engine.MsgDone, timeout)
}

func (l *loadSession) edge() window.LoadEdge {
	return window.LoadEdge{Cnt: l.w.snapshot(), TCP: l.w.tcpEdge(), At: time.Now()}
}

// openEdge and closeEdge take the load's edges. Its session needs no
// window of its own on the server: the load's figures are the client's,
// and the server's process CPU is read in the rr session's window.
func (l *loadSession) openEdge()  { l.in.E0 = l.edge() }
func (l *loadSession) closeEdge() { l.in.E1 = l.edge() }

// err is the load flows' first error.
func (l *loadSession) err() error { return l.w.err() }
