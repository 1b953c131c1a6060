package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/pkg/result"
)

// Event reports progress of a run to the caller (the CLI prints it).
type Event struct {
	Repeat, Repeats int
	Phase           string // "warmup", "measure", "done"
	Elapsed, Total  time.Duration
	Metrics         map[string]float64 // set when Phase == "done"
}

// Client runs tests against a cnibench server.
type Client struct {
	Logger   *slog.Logger
	Progress func(Event)
}

// control is an open control connection.
type control struct {
	c  net.Conn
	br *bufio.Reader
}

// external reports whether there is no cnibench server (an external HTTP
// server given by --url): calls are then answered locally with empty stats.
func (ct *control) external() bool { return ct == nil }

func (ct *control) call(m *Msg, want string, timeout time.Duration) (*Msg, error) {
	if ct.external() {
		switch want {
		case MsgReady:
			return &Msg{Type: want, Ready: &Ready{}}, nil
		case MsgStats:
			return &Msg{Type: want, Stats: &SrvStats{}}, nil
		}
		return &Msg{Type: want}, nil
	}
	_ = ct.c.SetDeadline(time.Now().Add(timeout))
	defer ct.c.SetDeadline(time.Time{})
	if err := WriteMsg(ct.c, m); err != nil {
		return nil, fmt.Errorf("send %s: %w", m.Type, err)
	}
	r, err := ReadMsg(ct.br)
	if err != nil {
		return nil, fmt.Errorf("wait for %s: %w", want, err)
	}
	if r.Type == MsgError {
		return nil, fmt.Errorf("server: %s", r.Error)
	}
	if r.Type != want {
		return nil, fmt.Errorf("server sent %s, want %s", r.Type, want)
	}
	return r, nil
}

// Dial opens a control connection and checks the server's protocol.
func dialControl(ctx context.Context, host string, port int, timeout time.Duration) (*control, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("connect to cnibench server: %w (is `cnibench serve` running there?)", err)
	}
	ct := &control{c: c, br: bufio.NewReader(c)}
	r, err := ct.call(&Msg{Type: MsgHello, Hello: &Hello{Proto: ProtoMagic, Version: ProtoVersion, Tool: "cnibench"}}, MsgHello, timeout)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err)
	}
	if err := CheckHello(r.Hello); err != nil {
		c.Close()
		return nil, err
	}
	return ct, nil
}

// Run runs cfg's test, cfg.Repeat times. When ctx is cancelled it stops,
// and returns the repeats measured so far (the one in progress cut short
// if at least a tenth of its window was measured) with Interrupted set,
// together with ctx's error.
func (cl *Client) Run(ctx context.Context, cfg Config) (*result.Result, error) {
	cfg = Defaults(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cl.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var host string
	var port int
	var ext *url.URL
	if cfg.URL != "" {
		ext, _ = url.Parse(cfg.URL)
		host = ext.Hostname()
		port, _ = strconv.Atoi(ext.Port())
		if port == 0 {
			port = 80
		}
	} else {
		host, port, _ = SplitTarget(cfg.Target)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	ip := ips[0].Unmap()
	var ct *control
	if ext == nil {
		ct, err = dialControl(ctx, ip.String(), port, cfg.Timeout)
		if err != nil {
			return nil, err
		}
		defer ct.c.Close()
	}

	res := &result.Result{
		Schema: result.SchemaResult,
		Tool:   buildinfo.Tool(),
		Start:  time.Now().UTC(),
		Host:   hostinfo.Collect(),
		Config: cfg.Map(),
	}
	res.Config["target_ip"] = ip.String()
	if ext != nil {
		res.Warnings = append(res.Warnings, "external HTTP server ("+cfg.URL+"): server CPU is not measured")
	}
	if cfg.BusyPoll {
		res.Warnings = append(res.Warnings, "busy polling was on: the client spun on non-blocking sockets, so latency excludes wake-ups and client CPU is inflated")
	}
	for i := 0; i < cfg.Repeat; i++ {
		rep, err := cl.repeat(ctx, ct, cfg, ip, port, i, res)
		if rep != nil {
			res.Repeats = append(res.Repeats, *rep)
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		if err != nil {
			// A failed repeat is recorded; a broken control channel ends the run.
			log.Warn("repeat failed", "repeat", i+1, "err", err)
			if rep == nil {
				res.Repeats = append(res.Repeats, result.Repeat{Index: i, Start: time.Now().UTC(), Error: err.Error()})
			}
			var ne net.Error
			if errors.As(err, &ne) || errors.Is(err, errControl) {
				res.Summarize()
				return res, err
			}
		}
	}
	res.Summarize()
	if res.Interrupted {
		return res, ctx.Err()
	}
	ok := 0
	for _, r := range res.Repeats {
		if r.Error == "" {
			ok++
		}
	}
	if ok == 0 {
		return res, fmt.Errorf("every repeat failed; first error: %s", res.Repeats[0].Error)
	}
	return res, nil
}

var errControl = errors.New("control channel")

// pathMTU is the kernel's path MTU towards the server (IP_MTU on the
// connected control socket), or 0 if unknown.
func (ct *control) pathMTU() int {
	if ct.external() {
		return 0
	}
	tc, ok := ct.c.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	v6 := false
	if a, ok := ct.c.RemoteAddr().(*net.TCPAddr); ok {
		v6 = a.IP.To4() == nil
	}
	mtu := 0
	_ = raw.Control(func(fd uintptr) {
		if m, err := pathMTU(int(fd), v6); err == nil {
			mtu = m
		}
	})
	return mtu
}

func (cl *Client) progress(e Event) {
	if cl.Progress != nil {
		cl.Progress(e)
	}
}

// sleepCtx waits d or until ctx is done; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (cl *Client) repeat(ctx context.Context, ct *control, cfg Config, ip netip.Addr, extPort, idx int, res *result.Result) (*result.Repeat, error) {
	ctlTimeout := cfg.Timeout + 5*time.Second
	setup := &Setup{Test: cfg.Test, Flows: cfg.Flows, ReqSize: cfg.ReqSize, RespSize: cfg.RespSize,
		MsgSize: cfg.MsgSize, HTTPBody: cfg.HTTPBody, TimeoutMillis: cfg.Timeout.Milliseconds()}
	r, err := ct.call(&Msg{Type: MsgSetup, Setup: setup}, MsgReady, ctlTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errControl, err)
	}
	if ct.external() {
		r.Ready.Port = extPort
	}
	port := r.Ready.Port
	defer func() {
		_, _ = ct.call(&Msg{Type: MsgTeardown}, MsgDone, ctlTimeout)
	}()

	w := newWorkload(cfg)
	if cfg.Test == HTTP {
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		hostHeader := addr
		if cfg.URL != "" {
			u, _ := url.Parse(cfg.URL)
			hostHeader = u.Host
		}
		w.startHTTP(addr, hostHeader)
	} else if err := w.startFlows(ip, port); err != nil {
		return nil, fmt.Errorf("open %d %s flow(s): %w", cfg.Flows, cfg.Test, err)
	}
	halted := false
	halt := func() {
		if !halted {
			halted = true
			w.halt()
		}
	}
	defer halt()

	total := cfg.Warmup + cfg.Duration
	cl.progress(Event{Repeat: idx + 1, Repeats: cfg.Repeat, Phase: "warmup", Total: total})
	if !sleepCtx(ctx, cfg.Warmup) {
		return nil, ctx.Err()
	}
	// Open the window: client counters, CPU, then tell the server.
	c0 := w.snapshot()
	ps0, psErr := ReadProcStat()
	cpu0 := readProcCPU()
	t0 := time.Now()
	w.phase.Store(phaseMeasured)
	if _, err := ct.call(&Msg{Type: MsgStart}, MsgStarted, ctlTimeout); err != nil {
		return nil, fmt.Errorf("%w: %w", errControl, err)
	}
	cl.progress(Event{Repeat: idx + 1, Repeats: cfg.Repeat, Phase: "measure", Elapsed: cfg.Warmup, Total: total})
	full := sleepCtx(ctx, cfg.Duration)
	// Close the window.
	w.phase.Store(phaseAfter)
	t1 := time.Now()
	c1 := w.snapshot()
	cpu1 := readProcCPU()
	ps1, psErr1 := ReadProcStat()
	window := t1.Sub(t0)
	if !full && window < cfg.Duration/10 {
		return nil, ctx.Err()
	}
	if cfg.Test == UDPStream {
		// Let the receiver drain datagrams still queued from the window.
		time.Sleep(100 * time.Millisecond)
	}
	sr, err := ct.call(&Msg{Type: MsgStop}, MsgStats, ctlTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errControl, err)
	}
	halt()
	srv := sr.Stats

	rep := &result.Repeat{Index: idx, Start: t0.UTC(), DurationSec: window.Seconds(), Metrics: map[string]float64{}}
	m := rep.Metrics
	sec := window.Seconds()
	tx := c1.TxBytes - c0.TxBytes
	trans := c1.Trans - c0.Trans
	m[result.TransPerSec] = float64(trans) / sec
	m[result.Errors] = float64(c1.Errors - c0.Errors)
	switch cfg.Test {
	case TCPStream:
		m[result.ThroughputBitsPerSec] = float64(tx) * 8 / sec
		if srv.WallMicros > 0 {
			m[result.ThroughputRxBitsPerSec] = float64(srv.RxBytes) * 8 / (float64(srv.WallMicros) / 1e6)
		}
		m[result.TCPRetransmits] = float64(c1.Retrans) - float64(c0.Retrans)
		if m[result.TCPRetransmits] < 0 {
			m[result.TCPRetransmits] = 0
		}
	case UDPStream:
		sent := c1.Measured - c0.Measured
		m[result.ThroughputBitsPerSec] = float64(tx) * 8 / sec
		m[result.DatagramsSent] = float64(sent)
		m[result.DatagramsReceived] = float64(srv.RxDatagrams)
		m[result.ThroughputRxBitsPerSec] = float64(srv.RxDatagrams) * float64(cfg.MsgSize) * 8 / sec
		if sent > 0 {
			lost := float64(sent) - float64(srv.RxDatagrams)
			if lost < 0 {
				lost = 0
			}
			m[result.LossPct] = 100 * lost / float64(sent)
		}
	case HTTP:
		m[result.ThroughputBitsPerSec] = float64(tx) * 8 / sec
	}
	if !IsStream(cfg.Test) {
		p := PercentilesOf(w.lat.merged())
		if p.Count > 0 {
			m[result.LatencyUsMean] = p.Mean
			m[result.LatencyUsP50] = p.P50
			m[result.LatencyUsP90] = p.P90
			m[result.LatencyUsP99] = p.P99
			m[result.LatencyUsP999] = p.P999
			m[result.LatencyUsMax] = p.Max
			rep.LatencyHist = encodeHist(w.lat.merged())
		}
		if w.conn != nil {
			cp := PercentilesOf(w.conn.merged())
			if cp.Count > 0 {
				m[result.ConnectUsP50] = cp.P50
				m[result.ConnectUsP90] = cp.P90
				m[result.ConnectUsP99] = cp.P99
				m[result.ConnectUsMax] = cp.Max
			}
		}
	}
	// CPU accounting over exactly the window.
	m[result.ClientCPUPct] = 100 * (cpu1.User + cpu1.Sys - cpu0.User - cpu0.Sys).Seconds() / sec
	m[result.ClientRSSBytes] = float64(cpu1.MaxRSS)
	srvWall := float64(srv.WallMicros)
	if cfg.Test == UDPStream {
		// The server's window includes draining the queue after the last
		// datagram: charge that work to the client's window.
		srvWall = window.Seconds() * 1e6
	}
	if srvWall > 0 {
		m[result.ServerCPUPct] = 100 * float64(srv.CPUUserMicro+srv.CPUSysMicro) / srvWall
	}
	if srv.Sessions > 1 {
		addWarning(res, fmt.Sprintf("the server ran up to %d sessions at once during a window: its CPU figures include other tests", srv.Sessions))
	}
	if psErr == nil && psErr1 == nil {
		h := HostCPUOver(ps1.Sub(ps0), window)
		m[result.HostCPUPct] = h.BusyPct
		m[result.HostCPUUserPct] = h.UserPct
		m[result.HostCPUSysPct] = h.SysPct
		m[result.HostCPUSoftirqPct] = h.SoftIRQPct
		m[result.HostCPUIrqPct] = h.IRQPct
		if IsStream(cfg.Test) {
			if bps := m[result.ThroughputBitsPerSec]; bps > 0 {
				m[result.CPUPctPer100Gbit] = h.BusyPct * 100e9 / bps
			}
		} else if trans > 0 {
			m[result.CPUUsPerTrans] = h.BusySeconds * 1e6 / float64(trans)
		}
	}
	if w.portsOut.Load() {
		addWarning(res, "connect failed with EADDRNOTAVAIL: the client ran out of ephemeral ports (TIME_WAIT); set net.ipv4.tcp_tw_reuse=1 or widen net.ipv4.ip_local_port_range")
	}
	if e := w.err(); e != nil && m[result.Errors] > 0 {
		addWarning(res, fmt.Sprintf("%.0f transaction(s) failed in repeat %d; first error: %v", m[result.Errors], idx+1, e))
	}
	if !full {
		addWarning(res, fmt.Sprintf("repeat %d was cut short by the interruption after %.1fs", idx+1, sec))
	}
	if trans == 0 && tx == 0 {
		rep.Error = "no traffic completed in the measured window"
		if e := w.err(); e != nil {
			rep.Error += ": " + e.Error()
		}
	}
	if res.Config["path_mtu"] == "" {
		if mtu := ct.pathMTU(); mtu > 0 {
			res.Config["path_mtu"] = strconv.Itoa(mtu)
		}
	}
	cl.progress(Event{Repeat: idx + 1, Repeats: cfg.Repeat, Phase: "done", Elapsed: total, Total: total, Metrics: m})
	return rep, nil
}

func addWarning(res *result.Result, w string) {
	for _, x := range res.Warnings {
		if x == w {
			return
		}
	}
	res.Warnings = append(res.Warnings, w)
}
