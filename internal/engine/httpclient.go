package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The http test's client: a minimal HTTP/1.1 client. On Linux the clients
// are state machines driven by a few epoll threads (httpepoll_linux.go);
// here is the response parsing both clients share and the portable client,
// one goroutine per concurrent client on Go's netpoller, used with --rate
// (whose pacing it does) and where there is no epoll.

// buildRequest returns the bytes of one GET request.
func buildRequest(host, path string, keepAlive bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: cnibench\r\nAccept: */*\r\n", path, host)
	if !keepAlive {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// Response limits.
const (
	maxHeaderLine  = 8 << 10
	maxHeaderLines = 100
)

// httpResponse is what the client needs from a response head.
type httpResponse struct {
	Status        int
	ContentLength int64 // -1 when absent
	Chunked       bool
	Close         bool // the server will close the connection
}

var errBadResponse = errors.New("malformed HTTP response")

// readResponseHead parses a status line and headers from br.
func readResponseHead(br *bufio.Reader) (httpResponse, error) {
	line, err := readLine(br)
	if err != nil {
		return httpResponse{ContentLength: -1}, err
	}
	resp, err := parseStatusLine(line)
	if err != nil {
		return resp, err
	}
	for n := 0; ; n++ {
		if n > maxHeaderLines {
			return resp, errTooManyHeaders
		}
		line, err := readLine(br)
		if err != nil {
			return resp, err
		}
		if len(line) == 0 {
			break
		}
		if err := parseHeaderLine(&resp, line); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

var errTooManyHeaders = fmt.Errorf("%w: more than %d header lines", errBadResponse, maxHeaderLines)

// parseStatusLine parses "HTTP/1.1 200 OK" (the line without its CRLF).
// Both clients (the goroutine one here, the epoll one in httpepoll_linux.go)
// parse heads with it and parseHeaderLine, so they follow the same rules.
func parseStatusLine(line []byte) (httpResponse, error) {
	resp := httpResponse{ContentLength: -1}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return resp, fmt.Errorf("%w: status line %q", errBadResponse, truncate(line))
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil || code < 100 || code > 999 {
		return resp, fmt.Errorf("%w: status code in %q", errBadResponse, truncate(line))
	}
	resp.Status = code
	if line[7] == '0' {
		resp.Close = true // HTTP/1.0 closes unless told otherwise
	}
	return resp, nil
}

// parseHeaderLine applies one (non-empty) header line to resp.
func parseHeaderLine(resp *httpResponse, line []byte) error {
	k, v, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return fmt.Errorf("%w: header line %q", errBadResponse, truncate(line))
	}
	v = bytes.TrimSpace(v)
	switch {
	case asciiEqualFold(k, "content-length"):
		cl, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || cl < 0 {
			return fmt.Errorf("%w: Content-Length %q", errBadResponse, truncate(v))
		}
		resp.ContentLength = cl
	case asciiEqualFold(k, "transfer-encoding"):
		resp.Chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
	case asciiEqualFold(k, "connection"):
		lv := bytes.ToLower(v)
		if bytes.Contains(lv, []byte("close")) {
			resp.Close = true
		} else if bytes.Contains(lv, []byte("keep-alive")) {
			resp.Close = false
		}
	}
	return nil
}

// hasBody reports whether a response with this head carries a body.
func (r httpResponse) hasBody() bool {
	return !(r.Status == 204 || r.Status == 304 || r.Status < 200)
}

// parseChunkSize parses a chunk-size line (extensions after ';' ignored).
func parseChunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("%w: chunk size %q", errBadResponse, truncate(line))
	}
	return size, nil
}

// readBody discards the response body.
func readBody(br *bufio.Reader, resp httpResponse) error {
	switch {
	case !resp.hasBody():
		return nil
	case resp.Chunked:
		return discardChunked(br)
	case resp.ContentLength >= 0:
		_, err := br.Discard(int(resp.ContentLength))
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	default:
		// Body until the server closes the connection.
		_, err := io.Copy(io.Discard, br)
		return err
	}
}

func discardChunked(br *bufio.Reader) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return err
		}
		if size == 0 {
			// Trailers, then an empty line.
			for {
				l, err := readLine(br)
				if err != nil {
					return err
				}
				if len(l) == 0 {
					return nil
				}
			}
		}
		if _, err := br.Discard(int(size)); err != nil {
			return err
		}
		if l, err := readLine(br); err != nil || len(l) != 0 {
			return fmt.Errorf("%w: missing CRLF after chunk", errBadResponse)
		}
	}
}

// readLine returns one line without its CRLF (or LF).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine {
		return nil, fmt.Errorf("%w: line longer than %d bytes", errBadResponse, br.Size())
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// startHTTP starts the http test's clients: on Linux the epoll client
// (httpepoll_linux.go), otherwise, or with --rate, one goroutine per client.
// startHTTP starts the http clients against addrs (HOST:PORT; with
// several, connections take them in turn).
func (w *workload) startHTTP(addrs []string, hostHeader string) {
	req := buildRequest(hostHeader, w.cfg.HTTPPath, w.cfg.HTTPKeepAlive)
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

func (w *workload) httpExchange(c net.Conn, br *bufio.Reader, req []byte) (httpResponse, error) {
	if _, err := c.Write(req); err != nil {
		return httpResponse{}, fmt.Errorf("http send request: %w", err)
	}
	resp, err := readResponseHead(br)
	if err != nil {
		return resp, fmt.Errorf("http read response: %w", err)
	}
	if err := readBody(br, resp); err != nil {
		return resp, fmt.Errorf("http read body: %w", err)
	}
	return resp, nil
}
