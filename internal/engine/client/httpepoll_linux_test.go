package client

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/httpmsg"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// The epoll client's parser gives the goroutine client's results on every
// response case, whatever pieces the bytes arrive in.
// testServer answers each connection with serve, until the test ends.
func testServer(t *testing.T, serve func(c net.Conn, n int)) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(accepted.Add(1))
			go func() {
				defer c.Close()
				serve(c, n)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), &accepted
}

// readRequest reads one request head; false at EOF or error.
func readRequest(br *bufio.Reader) bool {
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return false
		}
		if l == "\r\n" {
			return true
		}
	}
}

// respond serves every request on c with resp (one request when close).
func respond(resp string, keepAlive bool) func(net.Conn, int) {
	return func(c net.Conn, _ int) {
		br := bufio.NewReader(c)
		for readRequest(br) {
			if _, err := c.Write([]byte(resp)); err != nil || !keepAlive {
				return
			}
		}
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// runEpoll runs the epoll client against addr until until(counters) holds
// (or a 20 s safety limit passes: then the test fails), stops it and
// returns the workload. The phase is the measured one unless warmup.
func runEpoll(t *testing.T, addr string, cfg engine.Config, warmup bool, until func(window.Counters) bool) *workload {
	t.Helper()
	cfg.Test = engine.HTTP
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	w := newWorkload(cfg)
	if !warmup {
		w.phase.Store(engine.PhaseMeasured)
	}
	if !w.startHTTPEpoll([]string{addr}, httpmsg.BuildRequest(addr, "/", cfg.HTTPKeepAlive)) {
		t.Fatal("epoll client not started")
	}
	limit := time.Now().Add(20 * time.Second)
	for !until(w.snapshot()) {
		if time.Now().After(limit) {
			w.halt()
			t.Fatalf("condition not reached; counters %+v, first error %v", w.snapshot(), w.err())
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Still in the measured phase: every transaction counted until the
	// threads stop has its latency recorded.
	w.halt()
	return w
}

func TestEpollClientResponses(t *testing.T) {
	body := strings.Repeat("x", 1024)
	for _, tc := range []struct {
		name      string
		resp      string
		keepAlive bool
		bytes     uint64 // counted per response
	}{
		{"content-length close", "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\nConnection: close\r\n\r\n" + body, false, 1024},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + body + "\r\n0\r\n\r\n", false, 0},
		{"until close", "HTTP/1.0 200 OK\r\n\r\n" + body, false, 0},
		{"no content", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", false, 0},
		{"keep-alive", "HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n" + body, true, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 200
			if strings.Contains(tc.resp, " 204 ") {
				status = 204
			}
			addr, accepted := testServer(t, respond(tc.resp, tc.keepAlive))
			fds := openFDs(t)
			const flows = 8
			w := runEpoll(t, addr, engine.Config{Flows: flows, HTTPKeepAlive: tc.keepAlive}, false, func(c window.Counters) bool {
				return c.Trans >= 200 || c.Errors >= 200
			})
			c := w.snapshot()
			if status == 204 {
				if c.Trans != 0 || c.Errors == 0 || !strings.Contains(w.err().Error(), "http status 204") {
					t.Fatalf("204: counters %+v, error %v; want errors only", c, w.err())
				}
				return
			}
			if c.Errors != 0 || c.Trans < 200 {
				t.Fatalf("counters %+v, first error %v", c, w.err())
			}
			if c.TxBytes != tc.bytes*c.Trans {
				t.Errorf("%d body bytes counted for %d responses, want %d each", c.TxBytes, c.Trans, tc.bytes)
			}
			if n := w.lat.merged().TotalCount(); n != int64(c.Trans) {
				t.Errorf("%d latencies recorded for %d transactions", n, c.Trans)
			}
			if tc.keepAlive {
				// No connect times with keep-alive (newWorkload).
				if a := accepted.Load(); a > flows {
					t.Errorf("keep-alive: %d connections for %d clients", a, flows)
				}
			} else if conns := w.conn.merged().TotalCount(); conns != int64(c.Trans) {
				t.Errorf("%d connect times for %d transactions", conns, c.Trans)
			}
			// The client closed every socket: the server's ends then close
			// too (a leaked client socket keeps its server end open).
			limit := time.Now().Add(10 * time.Second)
			for openFDs(t) > fds && time.Now().Before(limit) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := openFDs(t); got > fds {
				t.Errorf("%d file descriptors open after halt, %d before", got, fds)
			}
		})
	}
}

// Failures are counted as errors, with the goroutine client's messages, and
// the clients carry on with new connections.
func TestEpollClientFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(net.Conn, int)
		cfg   engine.Config
		want  string
	}{
		{"garbage", respond("HTTX/1.1 200 OK\r\n\r\n", false), engine.Config{}, "status line"},
		{"status 500", respond("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", false), engine.Config{}, "http status 500"},
		{"truncated body", respond("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", false), engine.Config{}, "http read body: unexpected EOF"},
		{"closed at once", func(c net.Conn, _ int) {}, engine.Config{}, "http read response"},
		{"reset", func(c net.Conn, _ int) {
			readRequest(bufio.NewReader(c))
			_ = c.(*net.TCPConn).SetLinger(0)
		}, engine.Config{}, "connection reset"},
		{"no answer", func(c net.Conn, _ int) {
			readRequest(bufio.NewReader(c))
			time.Sleep(time.Second)
		}, engine.Config{Timeout: 20 * time.Millisecond}, "http read response: i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, accepted := testServer(t, tc.serve)
			cfg := tc.cfg
			cfg.Flows = 4
			w := runEpoll(t, addr, cfg, false, func(c window.Counters) bool { return c.Errors >= 20 })
			c := w.snapshot()
			if c.Trans != 0 || w.lat.merged().TotalCount() != 0 {
				t.Errorf("counters %+v: a failure counted as a transaction", c)
			}
			if e := w.err(); e == nil || !strings.Contains(e.Error(), tc.want) {
				t.Errorf("first error %v, want one containing %q", e, tc.want)
			}
			if a := accepted.Load(); a < 5 {
				t.Errorf("%d connections: the clients did not reconnect after failures", a)
			}
		})
	}
}

// A response dribbled a few bytes at a time, a chunked one with its chunks
// split across writes: the state machine resumes wherever a read ends.
func TestEpollClientSlowResponse(t *testing.T) {
	resp := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Long: " + strings.Repeat("h", 300) +
		"\r\n\r\n5\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\n"
	addr, _ := testServer(t, func(c net.Conn, _ int) {
		if !readRequest(bufio.NewReader(c)) {
			return
		}
		_ = c.(*net.TCPConn).SetNoDelay(true)
		for i := 0; i < len(resp); i += 7 {
			if _, err := c.Write([]byte(resp[i:min(i+7, len(resp))])); err != nil {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	w := runEpoll(t, addr, engine.Config{Flows: 3}, false, func(c window.Counters) bool { return c.Trans >= 10 || c.Errors > 0 })
	if c := w.snapshot(); c.Errors != 0 {
		t.Fatalf("counters %+v, first error %v", c, w.err())
	}
}

// Before the measured phase (warm-up) transactions count but no latency is
// recorded, as with the goroutine client.
func TestEpollClientWarmup(t *testing.T) {
	addr, _ := testServer(t, respond("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz", false))
	w := runEpoll(t, addr, engine.Config{Flows: 2}, true, func(c window.Counters) bool { return c.Trans >= 50 })
	if n := w.lat.merged().TotalCount(); n != 0 {
		t.Errorf("%d latencies recorded during warm-up", n)
	}
}

// A refused connect is an error with the errno, and EADDRNOTAVAIL-style
// checks see through the wrapping.
func TestEpollClientRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	w := runEpoll(t, addr, engine.Config{Flows: 2}, false, func(c window.Counters) bool { return c.Errors >= 5 })
	e := w.err()
	if e == nil || !strings.HasPrefix(e.Error(), "http connect:") || !errors.Is(e, unix.ECONNREFUSED) {
		t.Errorf("first error %v, want http connect: ... ECONNREFUSED", e)
	}
}

func TestHTTPThreads(t *testing.T) {
	if n := httpThreads(1); n != 1 {
		t.Errorf("httpThreads(1) = %d", n)
	}
	if n := httpThreads(1000); n < 1 || n > 1000 {
		t.Errorf("httpThreads(1000) = %d", n)
	}
}
