package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestMain lets the test binary act as a client process (for the test that
// kills a client mid-test).
func TestMain(m *testing.M) {
	if target := os.Getenv("CNIBENCH_TEST_CLIENT"); target != "" {
		cl := &client.Client{}
		_, err := cl.Run(context.Background(), engine.Config{Target: target, Test: engine.TCPStream, Flows: 4, Duration: time.Minute, Warmup: -1, Repeat: 1})
		fmt.Fprintln(os.Stderr, "client ended:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// startServer serves on a loopback port for the test's lifetime.
func startServer(t *testing.T) (*Server, string) {
	return startServerWith(t, Limits{}, func(srv *Server) {
		if n := srv.sessions.Load(); n != 0 {
			t.Errorf("%d sessions still open after shutdown", n)
		}
	})
}

// startServerWith serves on 127.0.0.1 with lim (zero fields: the defaults)
// for the test's lifetime; at cleanup it stops the server, checks it stopped
// cleanly within 10 s and then runs check.
func startServerWith(t *testing.T, lim Limits, check func(*Server)) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := NewServer(nil)
	srv.Limits = lim
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10s")
		}
		check(srv)
	})
	return srv, ln.Addr().String()
}

func quick(target, test string, flows int) engine.Config {
	return engine.Config{Target: target, Test: test, Flows: flows, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond, Repeat: 2, Timeout: 2 * time.Second}
}

func TestEveryTestOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping network integration test")
	}
	_, addr := startServer(t)
	for _, test := range engine.Tests {
		if test == engine.ICMPEcho {
			continue // needs ping_group_range: TestICMPEchoInNamespace
		}
		for _, flows := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d", test, flows), func(t *testing.T) {
				cfg := quick(addr, test, flows)
				if test == engine.HTTP {
					cfg.Flows = flows * 8
				}
				res, err := (&client.Client{}).Run(context.Background(), cfg)
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				checkResult(t, res, test)
			})
		}
	}
}

func checkResult(t *testing.T, res *result.Result, test string) {
	t.Helper()
	if res.Schema != result.SchemaResult || len(res.Repeats) != 2 || res.Interrupted {
		t.Fatalf("schema %q, %d repeats, interrupted %v", res.Schema, len(res.Repeats), res.Interrupted)
	}
	for _, r := range res.Repeats {
		if r.Error != "" {
			t.Fatalf("repeat %d: %s", r.Index, r.Error)
		}
	}
	med := func(k string) float64 {
		s, ok := res.Summary[k]
		if !ok || s.N != 2 {
			t.Fatalf("summary lacks %s (n=%d)", k, s.N)
		}
		if !(s.Min <= s.Median && s.Median <= s.Max && s.CI95Low <= s.Median && s.Median <= s.CI95High) {
			t.Errorf("%s: summary out of order: %+v", k, s)
		}
		return s.Median
	}
	if v := med(result.TransPerSec); v <= 0 {
		t.Errorf("trans_per_sec = %v", v)
	}
	for _, k := range []string{result.HostCPUPct, result.ClientCPUPct, result.ServerCPUPct} {
		if v := med(k); v <= 0 || v > 100*float64(res.Host.Cores)+50 {
			t.Errorf("%s = %v, outside (0, %d]", k, v, 100*res.Host.Cores)
		}
	}
	if res.Config["path_mtu"] == "" {
		t.Error("path_mtu not recorded")
	}
	// The tests whose flows are long-lived TCP connections (tcp_rr_loaded's
	// measured flows are tcp_rr's): the client reads their TCP_INFO.
	if test == engine.TCPStream || test == engine.TCPRR || test == engine.TCPRRLoaded {
		checkTCPInfo(t, res, med)
	}
	if engine.IsStream(test) {
		if v := med(result.ThroughputBitsPerSec); v <= 0 {
			t.Errorf("throughput = %v", v)
		}
		if v := med(result.ThroughputRxBitsPerSec); v <= 0 {
			t.Errorf("receiver throughput = %v", v)
		}
		if v := med(result.CPUPctPer100Gbit); v <= 0 {
			t.Errorf("cpu_pct_per_100gbit = %v", v)
		}
		if test == engine.UDPStream {
			if v := med(result.LossPct); v < 0 || v > 100 {
				t.Errorf("loss = %v", v)
			}
		}
		return
	}
	p50, p90, p99, p999, mx := med(result.LatencyUsP50), med(result.LatencyUsP90), med(result.LatencyUsP99), med(result.LatencyUsP999), med(result.LatencyUsMax)
	if !(0 < p50 && p50 <= p90 && p90 <= p99 && p99 <= p999 && p999 <= mx) {
		t.Errorf("latency percentiles out of order: %v %v %v %v %v", p50, p90, p99, p999, mx)
	}
	if test == engine.TCPRRLoaded {
		if v := med(result.LoadThroughputBitsPerSec); v <= 0 {
			t.Errorf("load throughput = %v", v)
		}
		if _, ok := res.Summary[result.CPUUsPerTrans]; ok {
			t.Error("tcp_rr_loaded reports cpu_us_per_trans, though its CPU is mostly the load's")
		}
	} else if v := med(result.CPUUsPerTrans); v <= 0 {
		t.Errorf("cpu_us_per_trans = %v", v)
	}
	if test == engine.TCPCRR || test == engine.HTTP {
		if v := med(result.ConnectUsP50); v <= 0 {
			t.Errorf("connect p50 = %v", v)
		}
	}
	for _, r := range res.Repeats {
		if r.LatencyHist == "" {
			t.Errorf("repeat %d has no latency histogram", r.Index)
		}
	}
}

func TestRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, addr := startServer(t)
	cfg := quick(addr, engine.TCPRR, 2)
	cfg.Rate = 2000
	cfg.Duration = time.Second
	res, err := (&client.Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Summary[result.TransPerSec].Median; got < 1800 || got > 2200 {
		t.Fatalf("--rate 2000: measured %.0f trans/s", got)
	}
}

func TestServerSurvivesKilledClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	srv, addr := startServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CNIBENCH_TEST_CLIENT="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until its session is streaming, then kill it without warning.
	deadline := time.Now().Add(10 * time.Second)
	for srv.sessions.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// The server must notice and end that session.
	for srv.sessions.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := srv.sessions.Load(); n != 0 {
		t.Fatalf("%d session(s) still open after the client was killed", n)
	}
	// And keep serving.
	res, err := (&client.Client{}).Run(context.Background(), quick(addr, engine.TCPRR, 1))
	if err != nil {
		t.Fatalf("run after a killed client: %v", err)
	}
	checkResult(t, res, engine.TCPRR)
}

func TestServerSurvivesGarbage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, addr := startServer(t)
	send := func(data []byte) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write(data)
		m, err := engine.ReadMsg(bufio.NewReader(c))
		if err != nil {
			return "closed: " + err.Error()
		}
		return m.Type + ": " + m.Error
	}
	if got := send([]byte("GET / HTTP/1.1\r\n\r\n")); !strings.Contains(got, "too large") {
		t.Errorf("HTTP request as hello: %q", got)
	}
	if got := send(frame(`{"type":"hello","hello":{"proto":"cnibench","version":99}}`)); !strings.Contains(got, "version") {
		t.Errorf("wrong version: %q", got)
	}
	if got := send(frame(`{"type":"start"}`)); !strings.Contains(got, "expected hello") {
		t.Errorf("start before hello: %q", got)
	}
	hello := frame(fmt.Sprintf(`{"type":"hello","hello":{"proto":"cnibench","version":%d}}`, engine.ProtoVersion))
	if got := send(append(hello, frame(`{"type":"setup","setup":{"test":"tcp_rr","flows":100000}}`)...)); !strings.Contains(got, "hello") {
		// The first reply is the hello; the bad setup is answered next.
		t.Errorf("hello reply: %q", got)
	}
	// A client that connects and says nothing, then one that half-sends a frame.
	idle, _ := net.Dial("tcp", addr)
	half, _ := net.Dial("tcp", addr)
	_, _ = half.Write([]byte{0, 0, 1})
	defer idle.Close()
	defer half.Close()
	res, err := (&client.Client{}).Run(context.Background(), quick(addr, engine.TCPCRR, 1))
	if err != nil {
		t.Fatalf("run next to garbage clients: %v", err)
	}
	checkResult(t, res, engine.TCPCRR)
}

func TestVersionMismatchIsClear(t *testing.T) {
	// A fake server that speaks a future protocol version.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = engine.ReadMsg(bufio.NewReader(c))
		_ = engine.WriteMsg(c, &engine.Msg{Type: engine.MsgHello, Hello: &engine.Hello{Proto: engine.ProtoMagic, Version: engine.ProtoVersion + 1}})
	}()
	_, err = (&client.Client{}).Run(context.Background(), quick(ln.Addr().String(), engine.TCPRR, 1))
	if !errors.Is(err, engine.ErrVersion) {
		t.Fatalf("got %v, want ErrVersion", err)
	}
}

func TestInterruptKeepsMeasuredRepeats(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, addr := startServer(t)
	cfg := quick(addr, engine.TCPRR, 1)
	cfg.Repeat = 5
	cfg.Duration = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var seen int
	cl := &client.Client{Progress: func(e client.Event) {
		if e.Phase == "done" {
			seen++
			if seen == 2 {
				cancel()
			}
		}
	}}
	res, err := cl.Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if res == nil || !res.Interrupted || len(res.Repeats) != 2 {
		t.Fatalf("want 2 kept repeats, interrupted: %+v", res)
	}
	if res.Summary[result.TransPerSec].N != 2 {
		t.Fatalf("summary n = %d", res.Summary[result.TransPerSec].N)
	}
}

// checkTCPInfo: the TCP_INFO figures of a long-lived TCP test are there
// and sane (an RTT on loopback is positive and below a second).
func checkTCPInfo(t *testing.T, res *result.Result, med func(string) float64) {
	t.Helper()
	srtt, mx, minRTT := med(result.TCPSRTTUsMedian), med(result.TCPSRTTUsMax), med(result.TCPMinRTTUs)
	if !(0 < minRTT && srtt <= mx && mx < 1e6) {
		t.Errorf("TCP RTTs out of order: min %v, srtt median %v, max %v µs", minRTT, srtt, mx)
	}
	if v := med(result.TCPSndCwndSegmentsMedian); v < 1 {
		t.Errorf("snd_cwnd median = %v segments", v)
	}
	if v := med(result.TCPRetransmits); v < 0 {
		t.Errorf("tcp_retransmits = %v", v)
	}
	if v := med(result.TCPRetransmitPct); v < 0 || v > 100 {
		t.Errorf("tcp_retransmit_pct = %v", v)
	}
	if _, ok := res.Summary[result.TCPRTTVarUsMedian]; !ok {
		t.Error("no tcp_rttvar_us_median")
	}
	if _, ok := res.Summary[result.TCPDeliveryRateBitsPerSec]; !ok {
		t.Error("no tcp_delivery_rate_bits_per_sec")
	}
}

// frame is body as one control-protocol frame (its length, 4 bytes big
// endian, then body), whatever body holds.
func frame(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}
