package client

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/cnibench/cnibench/internal/engine/httpmsg"
)

// The http test's client: a minimal HTTP/1.1 client. On Linux the clients
// are state machines driven by a few epoll threads (httpepoll_linux.go);
// here is the portable client (the request and the response parsing both
// share are in httpmsg), one goroutine per concurrent client on Go's netpoller, used with --rate
// (whose pacing it does) and where there is no epoll.

// startHTTP starts the http test's clients: on Linux the epoll client
// (httpepoll_linux.go), otherwise, or with --rate, one goroutine per client.
// startHTTP starts the http clients against addrs (HOST:PORT; with
// several, connections take them in turn).
func (w *workload) startHTTP(addrs []string, hostHeader string) {
	req := httpmsg.BuildRequest(hostHeader, w.cfg.HTTPPath, w.cfg.HTTPKeepAlive)
	if !forceGoroutineHTTP && w.startHTTPEpoll(addrs, req) {
		return
	}
	w.startHTTPGoroutines(addrs, req)
}

// forceGoroutineHTTP makes startHTTP use the goroutine client (tests).
var forceGoroutineHTTP = false

// startHTTPGoroutines starts one goroutine per client on Go's netpoller.
func (w *workload) startHTTPGoroutines(addrs []string, req []byte) {
	for i := 0; i < w.cfg.Flows; i++ {
		w.wg.Add(1)
		go w.httpClient(i, addrs, req)
	}
}

func (w *workload) httpClient(i int, addrs []string, req []byte) {
	defer w.wg.Done()
	f := &w.flows[i]
	d := net.Dialer{Timeout: w.cfg.Timeout}
	p := newPacer(w.cfg.Rate / float64(w.cfg.Flows))
	var c net.Conn
	br := bufio.NewReaderSize(nil, 4096)
	closeConn := func() {
		if c != nil {
			w.conns.Delete(c)
			c.Close()
			c = nil
		}
	}
	defer closeConn()
	next := i
	for !w.stop.Load() {
		t0 := p.sendTime(time.Now()) // scheduled send with --rate (coordinated omission)
		var ct time.Duration
		if c == nil {
			var err error
			addr := addrs[next%len(addrs)]
			next++
			c, err = d.Dial("tcp", addr)
			if err != nil {
				w.fail(i, fmt.Errorf("http connect: %w", err))
				time.Sleep(time.Millisecond)
				continue
			}
			ct = time.Since(t0)
			br.Reset(c)
			w.conns.Store(c, struct{}{})
			if w.stop.Load() {
				break
			}
		}
		_ = c.SetDeadline(time.Now().Add(w.cfg.Timeout))
		resp, err := w.httpExchange(c, br, req)
		if err != nil {
			closeConn()
			w.fail(i, err)
			continue
		}
		if !w.cfg.HTTPKeepAlive || resp.Close {
			closeConn()
		}
		if resp.Status != 200 {
			w.fail(i, fmt.Errorf("http status %d", resp.Status))
			continue
		}
		el := time.Since(t0)
		f.trans.Add(1)
		if resp.ContentLength > 0 {
			f.txBytes.Add(uint64(resp.ContentLength))
		}
		if w.measuring() {
			w.lat.record(i, el)
			if w.conn != nil && ct > 0 {
				w.conn.record(i, ct)
			}
		}
		p.wait(1, &w.stop)
	}
}

func (w *workload) httpExchange(c net.Conn, br *bufio.Reader, req []byte) (httpmsg.Response, error) {
	if _, err := c.Write(req); err != nil {
		return httpmsg.Response{}, fmt.Errorf("http send request: %w", err)
	}
	resp, err := httpmsg.ReadHead(br)
	if err != nil {
		return resp, fmt.Errorf("http read response: %w", err)
	}
	if err := httpmsg.ReadBody(br, resp); err != nil {
		return resp, fmt.Errorf("http read body: %w", err)
	}
	return resp, nil
}
