package httpmsg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// BuildRequest returns the bytes of one GET request.
func BuildRequest(host, path string, keepAlive bool) []byte {
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

// Response is what the client needs from a response head.
type Response struct {
	Status        int
	ContentLength int64 // -1 when absent
	Chunked       bool
	Close         bool // the server will close the connection
}

// ErrBadResponse is wrapped by every error about a response's bytes.
var ErrBadResponse = errors.New("malformed HTTP response")

// ReadHead parses a status line and headers from br.
func ReadHead(br *bufio.Reader) (Response, error) {
	line, err := readLine(br)
	if err != nil {
		return Response{ContentLength: -1}, err
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

var errTooManyHeaders = fmt.Errorf("%w: more than %d header lines", ErrBadResponse, maxHeaderLines)

// parseStatusLine parses "HTTP/1.1 200 OK" (the line without its CRLF).
// Both parsers (ReadHead for the goroutine client, Parser for the epoll
// one) parse heads with it and parseHeaderLine, so they follow the same rules.
func parseStatusLine(line []byte) (Response, error) {
	resp := Response{ContentLength: -1}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return resp, fmt.Errorf("%w: status line %q", ErrBadResponse, truncate(line))
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil || code < 100 || code > 999 {
		return resp, fmt.Errorf("%w: status code in %q", ErrBadResponse, truncate(line))
	}
	resp.Status = code
	if line[7] == '0' {
		resp.Close = true // HTTP/1.0 closes unless told otherwise
	}
	return resp, nil
}

// parseHeaderLine applies one (non-empty) header line to resp.
func parseHeaderLine(resp *Response, line []byte) error {
	k, v, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return fmt.Errorf("%w: header line %q", ErrBadResponse, truncate(line))
	}
	v = bytes.TrimSpace(v)
	switch {
	case asciiEqualFold(k, "content-length"):
		cl, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || cl < 0 {
			return fmt.Errorf("%w: Content-Length %q", ErrBadResponse, truncate(v))
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
func (r Response) hasBody() bool {
	return !(r.Status == 204 || r.Status == 304 || r.Status < 200)
}

// parseChunkSize parses a chunk-size line (extensions after ';' ignored).
func parseChunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("%w: chunk size %q", ErrBadResponse, truncate(line))
	}
	return size, nil
}

// ReadBody discards the response body.
func ReadBody(br *bufio.Reader, resp Response) error {
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
			return fmt.Errorf("%w: missing CRLF after chunk", ErrBadResponse)
		}
	}
}

// readLine returns one line without its CRLF (or LF).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeaderLine {
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrBadResponse, br.Size())
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
