package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/internal/engine/window"
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
	// Token is sent in the hello to a server that requires one (--token,
	// CNIBENCH_TOKEN).
	Token string
	// Window, if set, is told when each repeat's measured window opens and
	// closes (a CPU profiler samples exactly the window).
	Window WindowHook
}

// WindowHook watches the measured windows of a run. WindowOpen is called
// just before the window's first edge is taken, WindowClose just after
// its last edge (before the server's stats are asked for), with the
// repeat's index (0-based); WindowClose may add metrics to the repeat
// once it is measured, through AddMetrics. A hook's errors are its own:
// it records them as warnings of the result it is given.
type WindowHook interface {
	WindowOpen(repeat int)
	WindowClose(repeat int)
	// AddMetrics adds the hook's figures for the repeat to rep and its
	// warnings to res; called once per measured repeat.
	AddMetrics(repeat int, rep *result.Repeat, res *result.Result)
}

// Run runs cfg's test, cfg.Repeat times. When ctx is cancelled it stops,
// and returns the repeats measured so far (the one in progress cut short
// if at least a tenth of its window was measured) with Interrupted set,
// together with ctx's error.
func (cl *Client) Run(ctx context.Context, cfg engine.Config) (*result.Result, error) {
	cfg = engine.Defaults(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cl.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	type hostPort struct {
		host string
		port int
	}
	var dests []hostPort
	var ext *url.URL
	switch {
	case cfg.URL != "":
		for _, one := range strings.Split(cfg.URL, ",") {
			u, _ := url.Parse(one)
			if ext == nil {
				ext = u
			}
			port, _ := strconv.Atoi(u.Port())
			if port == 0 {
				port = 80
			}
			dests = append(dests, hostPort{u.Hostname(), port})
		}
	case cfg.Service != "":
		for _, one := range strings.Split(cfg.Service, ",") {
			h, p, _ := engine.SplitTarget(one)
			dests = append(dests, hostPort{h, p})
		}
	default:
		h, p, _ := engine.SplitTarget(cfg.Target)
		dests = append(dests, hostPort{h, p})
	}
	// Several destinations (--service or --url lists): connections take
	// them in turn, e.g. a service's backends reached without the service.
	var targets []netip.AddrPort
	for _, d := range dests {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", d.host)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("resolve %s: %w", d.host, err)
		}
		targets = append(targets, netip.AddrPortFrom(ips[0].Unmap(), uint16(d.port)))
	}
	ip, port := targets[0].Addr(), int(targets[0].Port())
	if len(targets) == 1 {
		targets = nil
	}
	if cfg.Test == engine.ICMPEcho {
		// Fail before any repeat when ICMP datagram sockets are refused.
		if err := checkICMPSocket(ip); err != nil {
			return nil, err
		}
	}
	var ct *control
	var pre []byte
	var err error
	if cfg.Service != "" {
		sp := engine.SvcPreamble{OneShot: cfg.Test == engine.TCPCRR, ReqSize: cfg.ReqSize, RespSize: cfg.RespSize}
		if cfg.Test == engine.TCPStream {
			sp = engine.SvcPreamble{Sink: true, ReqSize: min(cfg.MsgSize, engine.MaxMsgSize), RespSize: 1}
		}
		if pre, err = engine.EncodeSvcPreamble(cl.Token, sp); err != nil {
			return nil, &engine.FieldError{Field: "service", Value: cfg.Service, Fix: err.Error()}
		}
	} else if ext == nil {
		ct, err = dialControl(ctx, ip.String(), port, cfg.Timeout, newHello(cfg, cl.Token))
		if err != nil {
			return nil, err
		}
		defer ct.c.Close()
	}
	var ld *loadSession
	if cfg.Test == engine.TCPRRLoaded {
		if ld, err = dialLoad(ctx, ip.String(), port, cfg, cl.Token); err != nil {
			return nil, err
		}
		defer ld.close()
	}

	// The path MTU, before the first repeat: udp_stream's datagrams fit it
	// unless --message-size says otherwise.
	mtu := ct.pathMTU()
	var sizeWarning, sizeSource string
	if cfg.Test == engine.UDPStream {
		cfg.MsgSize, sizeSource, sizeWarning = engine.UDPDatagramSize(cfg.MsgSize, mtu, ip.Is6())
	}
	res := &result.Result{
		Schema: result.SchemaResult,
		Tool:   buildinfo.Tool(),
		Start:  time.Now().UTC(),
		Host:   hostinfo.Collect(),
		Config: cfg.Map(),
	}
	res.Config["target_ip"] = ip.String()
	if mtu > 0 {
		res.Config["path_mtu"] = strconv.Itoa(mtu)
	}
	if sizeSource != "" {
		res.Config["message_size_from"] = sizeSource
	}
	if sizeWarning != "" {
		res.Warnings = append(res.Warnings, sizeWarning)
	}
	if ext != nil {
		res.Warnings = append(res.Warnings, "external HTTP server ("+cfg.URL+"): server CPU is not measured")
	}
	if pre != nil {
		res.Warnings = append(res.Warnings, "service mode ("+cfg.Service+"): the servers' CPU is not measured")
	}
	if cfg.BusyPoll {
		res.Warnings = append(res.Warnings, "busy polling was on: the client spun on non-blocking sockets, so latency excludes wake-ups and client CPU is inflated")
	}
	for i := 0; i < cfg.Repeat; i++ {
		rep, err := cl.repeat(ctx, ct, ld, cfg, ip, port, i, res, pre, targets)
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

// repeat runs one repeat; ld is tcp_rr_loaded's load session (nil for
// the other tests).
func (cl *Client) repeat(ctx context.Context, ct *control, ld *loadSession, cfg engine.Config, ip netip.Addr, extPort, idx int, res *result.Result, svcPre []byte, targets []netip.AddrPort) (*result.Repeat, error) {
	ctlTimeout := cfg.Timeout + 5*time.Second
	setup := &engine.Setup{Test: dataTest(cfg.Test), Flows: cfg.Flows, ReqSize: cfg.ReqSize, RespSize: cfg.RespSize,
		MsgSize: cfg.MsgSize, HTTPBody: cfg.HTTPBody, TimeoutMillis: cfg.Timeout.Milliseconds()}
	r, err := ct.call(&engine.Msg{Type: engine.MsgSetup, Setup: setup}, engine.MsgReady, ctlTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errControl, err)
	}
	if ct.external() {
		r.Ready.Port = extPort
	}
	port := r.Ready.Port
	defer func() {
		_, _ = ct.call(&engine.Msg{Type: engine.MsgTeardown}, engine.MsgDone, ctlTimeout)
	}()

	if ld != nil {
		// The load first, so the rr flows' warm-up runs under it.
		defer ld.end(ctlTimeout)
		if err := ld.start(ip, ctlTimeout); err != nil {
			return nil, err
		}
	}
	wcfg := cfg
	wcfg.Test = dataTest(cfg.Test)
	w := newWorkload(wcfg)
	w.cookie = r.Ready.Cookie
	w.svcPreamble = svcPre
	w.targets = targets
	if cfg.Test == engine.HTTP {
		addrs := []string{net.JoinHostPort(ip.String(), strconv.Itoa(port))}
		if len(targets) > 0 {
			addrs = addrs[:0]
			for _, t := range targets {
				addrs = append(addrs, t.String())
			}
		}
		hostHeader := addrs[0]
		if cfg.URL != "" {
			first, _, _ := strings.Cut(cfg.URL, ",")
			u, _ := url.Parse(first)
			hostHeader = u.Host
		}
		w.startHTTP(addrs, hostHeader)
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
	// Open the window: client edge, flows to the measured phase, then the
	// server's edge.
	in := window.In{Test: cfg.Test, External: ct.external(), BootID: hoststat.ReadBootID()}
	if cl.Window != nil {
		cl.Window.WindowOpen(idx)
	}
	in.E0 = w.edge()
	if ld != nil {
		ld.openEdge()
	}
	w.phase.Store(engine.PhaseMeasured)
	if _, err := ct.call(&engine.Msg{Type: engine.MsgStart}, engine.MsgStarted, ctlTimeout); err != nil {
		return nil, fmt.Errorf("%w: %w", errControl, err)
	}
	cl.progress(Event{Repeat: idx + 1, Repeats: cfg.Repeat, Phase: "measure", Elapsed: cfg.Warmup, Total: total})
	full := sleepCtx(ctx, cfg.Duration)
	// Close the window.
	w.phase.Store(engine.PhaseAfter)
	in.E1 = w.edge()
	if cl.Window != nil {
		cl.Window.WindowClose(idx)
	}
	if ld != nil {
		ld.closeEdge()
		in.Load = &ld.in
	}
	span := in.E1.At.Sub(in.E0.At)
	if !full && span < cfg.Duration/10 {
		return nil, ctx.Err()
	}
	if cfg.Test == engine.UDPStream {
		// udp_stream senders stop at the phase change: wait for them, so
		// the count of measured datagrams is final before the server
		// drains its queues and counts what arrived.
		halt()
		in.UDPSent, in.UDPSentBytes = w.udpSent()
	}
	sr, err := ct.call(&engine.Msg{Type: engine.MsgStop}, engine.MsgStats, ctlTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errControl, err)
	}
	halt()
	in.Srv = *sr.Stats
	if !engine.IsStream(cfg.Test) {
		in.Lat = PercentilesOf(w.lat.merged())
		if w.conn != nil {
			in.Conn = PercentilesOf(w.conn.merged())
		}
	}

	out := window.Metrics(in)
	rep := &result.Repeat{Index: idx, Start: in.E0.At.UTC(), DurationSec: span.Seconds(), Metrics: out.Metrics}
	if in.Lat.Count > 0 {
		rep.LatencyHist = encodeHist(w.lat.merged())
	}
	for _, x := range out.Warnings {
		addWarning(res, x)
	}
	if out.SameHost != nil {
		res.Config["server_host"] = "other"
		if *out.SameHost {
			res.Config["server_host"] = "same"
			addWarning(res, "client and server share one host (same boot id): host_cpu_pct covers both ends, counted once")
		}
	}
	m := rep.Metrics
	sec := span.Seconds()
	ownSessions := 1
	if ld != nil {
		ownSessions = 2 // the rr session and the load's
	}
	if in.Srv.Sessions > ownSessions {
		addWarning(res, fmt.Sprintf("the server ran up to %d sessions at once during a window (this run's: %d): its CPU figures include other tests", in.Srv.Sessions, ownSessions))
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
	if in.E1.Cnt.Trans == in.E0.Cnt.Trans && in.E1.Cnt.TxBytes == in.E0.Cnt.TxBytes {
		rep.Error = "no traffic completed in the measured window"
		if e := w.err(); e != nil {
			rep.Error += ": " + e.Error()
		}
	}
	if ld != nil && rep.Error == "" && in.Load.E1.Cnt.TxBytes == in.Load.E0.Cnt.TxBytes {
		rep.Error = "the load's tcp_stream flows moved no data in the measured window"
		if e := ld.err(); e != nil {
			rep.Error += ": " + e.Error()
		}
	}
	if cl.Window != nil {
		cl.Window.AddMetrics(idx, rep, res)
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
