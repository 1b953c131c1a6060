package client

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/internal/engine/sock"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// flowCounters are one flow's running totals, written only by that flow's
// goroutine and read by the snapshotter. Padded to its own cache lines.
type flowCounters struct {
	txBytes  atomic.Uint64
	trans    atomic.Uint64 // transactions, or messages/datagrams for streams
	measured atomic.Uint64 // udp_stream: datagrams sent in the measured phase
	errors   atomic.Uint64
	fd       atomic.Int64 // current socket, for TCP_INFO (-1 when none)
	// icmp_echo: requests sent, requests lost (no reply within --timeout),
	// late replies and mismatched messages.
	sent, lost, late, mismatched atomic.Uint64
	_                            [56]byte
}

// workload is the shared state of one repeat's client side.
type workload struct {
	cfg   engine.Config
	phase atomic.Int32
	stop  atomic.Bool
	wg    sync.WaitGroup
	flows []flowCounters
	lat   *recorder
	conn  *recorder // connect times (crr, http without keep-alive)

	mu       sync.Mutex
	firstErr error
	portsOut atomic.Bool // EADDRNOTAVAIL seen: ephemeral ports exhausted

	fdMu sync.Mutex
	fds  map[int]struct{}
	// conns are the http test's open connections (net.Conn → struct{}).
	conns sync.Map
	// threads is how many flow threads were reserved (see sock.ReserveThreads).
	threads int
	// cookie is the session's cookie, carried by every UDP datagram.
	cookie uint64
	// svcPreamble, in service mode (Config.Service), opens every tcp_rr
	// connection and every tcp_crr transaction (engine.EncodeSvcPreamble).
	svcPreamble []byte
	// targets, when the client was given several destinations (--service
	// or --url lists), are taken in turn: flow i's connections start at
	// targets[i%n] and each new connection takes the next.
	targets []netip.AddrPort
}

func newWorkload(cfg engine.Config) *workload {
	w := &workload{cfg: cfg, flows: make([]flowCounters, cfg.Flows), fds: map[int]struct{}{}}
	for i := range w.flows {
		w.flows[i].fd.Store(-1)
	}
	w.lat = newRecorder(cfg.Flows)
	if cfg.Test == engine.TCPCRR || (cfg.Test == engine.HTTP && !cfg.HTTPKeepAlive) {
		w.conn = newRecorder(cfg.Flows)
	}
	return w
}

func (w *workload) measuring() bool { return w.phase.Load() == engine.PhaseMeasured }

// fail records a flow's error; the first one is kept for the report.
func (w *workload) fail(flow int, err error) {
	if w.stop.Load() {
		return
	}
	w.flows[flow].errors.Add(1)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		w.portsOut.Store(true)
	}
	w.mu.Lock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	w.mu.Unlock()
}

func (w *workload) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// track registers a socket so that halt can unblock it.
func (w *workload) track(flow, fd int) {
	w.fdMu.Lock()
	w.fds[fd] = struct{}{}
	w.fdMu.Unlock()
	w.flows[flow].fd.Store(int64(fd))
}

func (w *workload) untrack(flow, fd int) {
	w.flows[flow].fd.Store(-1)
	w.fdMu.Lock()
	delete(w.fds, fd)
	w.fdMu.Unlock()
	sock.Close(fd)
}

// halt stops all flows and waits for them: blocked reads and writes are
// woken by shutting their sockets down.
func (w *workload) halt() {
	w.stop.Store(true)
	w.fdMu.Lock()
	for fd := range w.fds {
		sock.Shutdown(fd)
	}
	w.fdMu.Unlock()
	w.conns.Range(func(k, _ any) bool {
		_ = k.(net.Conn).SetDeadline(time.Now())
		return true
	})
	w.wg.Wait()
	if w.threads > 0 {
		sock.ReleaseThreads(w.threads)
		w.threads = 0
	}
}

func (w *workload) snapshot() window.Counters {
	var c window.Counters
	for i := range w.flows {
		f := &w.flows[i]
		c.TxBytes += f.txBytes.Load()
		c.Trans += f.trans.Load()
		c.Measured += f.measured.Load()
		c.Errors += f.errors.Load()
		c.Sent += f.sent.Load()
		c.Lost += f.lost.Load()
		c.Late += f.late.Load()
		c.Mismatched += f.mismatched.Load()
	}
	return c
}

// pacer spreads a flow's units (bytes or transactions) evenly at perSec.
// It sleeps only when ahead of schedule, so the average rate is exact even
// though the OS timer is coarse.
type pacer struct {
	start  time.Time
	perSec float64
	done   float64
	// slept: the last wait slept (the flow was ahead of schedule), so the
	// next send starts when the timer woke it, not at the exact due time.
	slept bool
}

func newPacer(perSec float64) *pacer {
	if perSec <= 0 {
		return nil
	}
	return &pacer{start: time.Now(), perSec: perSec}
}

// sendTime is when the next unit was due to be sent: with a fixed rate and
// the flow behind schedule (the previous transaction ended after this one
// was due), latency is timed from the due time (as wrk2 does), not from the
// moment the send actually happened, so a slow response that delays later
// sends counts against their latency instead of being hidden (coordinated
// omission). When the flow was ahead and slept until the due time, the
// send starts when it woke (the OS timer's lateness is not the network's).
// Without a pacer (closed loop) it is now.
func (p *pacer) sendTime(now time.Time) time.Time {
	if p == nil || p.slept {
		return now
	}
	due := p.start.Add(time.Duration(p.done / p.perSec * float64(time.Second)))
	if due.After(now) {
		return now
	}
	return due
}

func (p *pacer) wait(units float64, stop *atomic.Bool) {
	if p == nil {
		return
	}
	p.done += units
	due := p.start.Add(time.Duration(p.done / p.perSec * float64(time.Second)))
	p.slept = time.Until(due) > 0
	for {
		d := time.Until(due)
		if d <= 0 || stop.Load() {
			return
		}
		if d > 100*time.Millisecond {
			d = 100 * time.Millisecond
		}
		time.Sleep(d)
	}
}

// edge reads the client's side of one edge of the measured window: the
// flows' counters (and TCP_INFO of long-lived TCP flows) and when they
// were read, the process's and the host's CPU, and the namespace's IP
// fragmentation counters.
func (w *workload) edge() window.ClientEdge {
	e := window.ClientEdge{Cnt: w.snapshot(), At: time.Now()}
	if readsTCPInfo(w.cfg.Test) {
		e.TCP = w.tcpEdge()
	}
	e.CPU, e.CPUErr = hoststat.ReadProcCPU()
	e.Host, e.HostErr = hoststat.ReadProcStat()
	e.Cg, e.CgErr = hoststat.ReadOwnCgroup()
	e.Others = hoststat.ReadOthers()
	e.Frag, e.FragErr = hoststat.ReadIPFrag()
	return e
}

// udpSent is udp_stream's datagrams (and bytes) stamped with the measured
// phase; final once the senders have stopped.
func (w *workload) udpSent() (datagrams, bytes uint64) {
	for i := range w.flows {
		datagrams += w.flows[i].measured.Load()
	}
	return datagrams, datagrams * uint64(w.cfg.MsgSize)
}

// target returns the destination of flow i's k-th connection: (ip, port)
// unless the client has several destinations.
func (w *workload) target(i, k int, ip netip.Addr, port int) (netip.Addr, int) {
	if n := len(w.targets); n > 0 {
		t := w.targets[(i+k)%n]
		return t.Addr(), int(t.Port())
	}
	return ip, port
}
