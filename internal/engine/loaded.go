package engine

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
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

// loadEdge is what the client reads of its load at one edge.
type loadEdge struct {
	At  time.Time
	Cnt clientCounters
	TCP tcpEdge
}

// loadIn is tcp_rr_loaded's load over one measured window.
type loadIn struct {
	E0, E1 loadEdge
}

// loadMetrics records the load's throughput and TCP figures.
func loadMetrics(o *windowOut, in loadIn) {
	m := o.Metrics
	sec := in.E1.At.Sub(in.E0.At).Seconds()
	if sec <= 0 {
		o.warn("the load's window has no length: its throughput not measured")
		return
	}
	tx := in.E1.Cnt.TxBytes - in.E0.Cnt.TxBytes
	m[result.LoadThroughputBitsPerSec] = float64(tx) * 8 / sec
	if tx == 0 {
		o.warn("the load's tcp_stream flows wrote nothing during a window: its latency was not measured under load")
	}
	if n := in.E1.Cnt.Errors - in.E0.Cnt.Errors; n > 0 {
		o.warn("%d of the load's tcp_stream flows failed during a window", n)
	}
	if err := firstErr(in.E0.TCP.Err, in.E1.TCP.Err); err != nil {
		o.warn("TCP_INFO could not be read on %d load socket(s): load_tcp_* figures cover the others (%v)", in.E0.TCP.Unread+in.E1.TCP.Unread, err)
	}
	f := tcpFiguresOver(in.E0.TCP, in.E1.TCP)
	if f.Flows > 0 {
		m[result.LoadTCPSRTTUsMedian] = f.SRTTMedian
	}
	if f.DeltaFlows > 0 {
		m[result.LoadTCPRetransmits] = float64(f.Retrans)
	}
}

// loadSession is the client's side of tcp_rr_loaded's load: its own
// control session and, per repeat, its tcp_stream flows.
type loadSession struct {
	ct  *control
	cfg Config // the load's tcp_stream configuration
	w   *workload
	in  loadIn
}

// loadConfig is the tcp_stream configuration of cfg's load: LoadFlows
// flows at full speed, writing cfg.MsgSize bytes at a time.
func loadConfig(cfg Config) Config {
	c := cfg
	c.Test, c.Flows, c.LoadFlows = TCPStream, cfg.LoadFlows, 0
	c.Rate, c.BusyPoll = 0, false
	return c
}

// dialLoad opens the load's session.
func dialLoad(ctx context.Context, host string, port int, cfg Config, token string) (*loadSession, error) {
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
	setup := &Setup{Test: TCPStream, Flows: l.cfg.Flows, ReqSize: l.cfg.ReqSize, RespSize: l.cfg.RespSize,
		MsgSize: l.cfg.MsgSize, TimeoutMillis: l.cfg.Timeout.Milliseconds()}
	r, err := l.ct.call(&Msg{Type: MsgSetup, Setup: setup}, MsgReady, timeout)
	if err != nil {
		return fmt.Errorf("%w: load session: %w", errControl, err)
	}
	l.w = newWorkload(l.cfg)
	l.w.cookie = r.Ready.Cookie
	l.in = loadIn{}
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
	_, _ = l.ct.call(&Msg{Type: MsgTeardown}, MsgDone, timeout)
}

func (l *loadSession) edge() loadEdge {
	return loadEdge{Cnt: l.w.snapshot(), TCP: l.w.tcpEdge(), At: time.Now()}
}

// openEdge and closeEdge take the load's edges. Its session needs no
// window of its own on the server: the load's figures are the client's,
// and the server's process CPU is read in the rr session's window.
func (l *loadSession) openEdge()  { l.in.E0 = l.edge() }
func (l *loadSession) closeEdge() { l.in.E1 = l.edge() }

// err is the load flows' first error.
func (l *loadSession) err() error { return l.w.err() }
