package httpmsg

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
)

// responseCases are parsed by both parsers: ReadHead and ReadBody, and
// Parser (TestRespParser).
var responseCases = []struct {
	name    string
	in      string
	status  int
	clen    int64
	close   bool
	wantErr string
}{
	{"keep-alive", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 5, false, ""},
	{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 3\r\n\r\nabc", 200, 3, true, ""},
	{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, 0, true, ""},
	{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", 200, 0, false, ""},
	{"bare LF", "HTTP/1.1 404 Not Found\nContent-Length: 2\n\nno", 404, 2, false, ""},
	{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nTrailer: 1\r\n\r\n", 200, -1, false, ""},
	{"no length", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil eof", 200, -1, true, ""},
	{"no content", "HTTP/1.1 204 No Content\r\n\r\n", 204, -1, false, ""},
	{"bad status line", "HTTX/1.1 200 OK\r\n\r\n", 0, 0, false, "status line"},
	{"bad code", "HTTP/1.1 2x0 OK\r\n\r\n", 0, 0, false, "status code"},
	{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, 0, false, "Content-Length"},
	{"bad header", "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", 0, 0, false, "header line"},
	{"truncated head", "HTTP/1.1 200 OK\r\nContent-Len", 0, 0, false, "unexpected EOF"},
	{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, 0, false, "unexpected EOF"},
	{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, 0, false, "chunk size"},
	{"huge line", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 10000) + "\r\n\r\n", 0, 0, false, "longer than"},
	{"longest line", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 4096-5) + "\r\nContent-Length: 1\r\n\r\nz", 200, 1, false, ""},
	{"line one too long", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 4096-4) + "\r\nContent-Length: 1\r\n\r\nz", 0, 0, false, "longer than"},
	{"too many headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: y\r\n", 102) + "\r\n", 0, 0, false, "header lines"},
	{"missing chunk CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", 0, 0, false, "missing CRLF"},
	{"1xx", "HTTP/1.1 100 Continue\r\n\r\n", 100, -1, false, ""},
}

func TestReadResponse(t *testing.T) {
	for _, tt := range responseCases {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 4096)
			resp, err := ReadHead(br)
			if err == nil {
				err = ReadBody(br, resp)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.status || resp.ContentLength != tt.clen || resp.Close != tt.close {
				t.Fatalf("got %+v, want status %d length %d close %v", resp, tt.status, tt.clen, tt.close)
			}
			if n := br.Buffered(); n != 0 {
				t.Fatalf("%d bytes left unread", n)
			}
		})
	}
}

func TestBuildRequest(t *testing.T) {
	ka := string(BuildRequest("h:1", "/x?y=1", true))
	if !strings.HasPrefix(ka, "GET /x?y=1 HTTP/1.1\r\nHost: h:1\r\n") || strings.Contains(ka, "Connection: close") || !strings.HasSuffix(ka, "\r\n\r\n") {
		t.Fatalf("keep-alive request: %q", ka)
	}
	if c := string(BuildRequest("h", "/", false)); !strings.Contains(c, "Connection: close\r\n") {
		t.Fatalf("close request: %q", c)
	}
}

// FuzzReadResponse: arbitrary server bytes never panic the client parser.
func FuzzReadResponse(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	f.Add("HTTP/1.0 500 x\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		br := bufio.NewReaderSize(strings.NewReader(in), 4096)
		resp, err := ReadHead(br)
		if err != nil {
			return
		}
		if resp.Status < 100 || resp.Status > 999 || resp.ContentLength < -1 {
			t.Fatalf("accepted an impossible response: %+v", resp)
		}
		_ = ReadBody(br, resp)
	})
}

// FuzzRespParser: the epoll client's incremental parser accepts exactly
// what ReadHead/ReadBody accept, with the same head, whatever the
// pieces the bytes arrive in.
func FuzzRespParser(f *testing.F) {
	for _, c := range responseCases {
		f.Add(c.in, uint8(7))
	}
	f.Fuzz(func(t *testing.T, in string, piece uint8) {
		// What readResponse used is what left the strings.Reader and is
		// no longer buffered: an input longer than the buffer is not all
		// read into it.
		sr := strings.NewReader(in)
		br := bufio.NewReaderSize(sr, 4096)
		want, err := ReadHead(br)
		if err == nil {
			err = ReadBody(br, want)
		}
		got, used, perr := parseInPieces(in, int(piece)%64+1)
		if (err == nil) != (perr == nil) {
			t.Fatalf("readResponse: %v; Parser: %v", err, perr)
		}
		if err == nil && (got != want || used != len(in)-sr.Len()-br.Buffered()) {
			t.Fatalf("readResponse %+v (%d buffered, %d unread); Parser %+v (used %d of %d)", want, br.Buffered(), sr.Len(), got, used, len(in))
		}
	})
}

// parseInPieces feeds in to a Parser piece bytes at a time through a
// buffer of LineBuf bytes, as the epoll client does, then signals EOF;
// it returns the head and how many bytes the response used.
func parseInPieces(in string, piece int) (Response, int, error) {
	var p Parser
	var buf [LineBuf]byte
	r, n, off, used := 0, 0, 0, 0
	for iter := 0; !p.Done(); iter++ {
		if iter > 2*len(in)+10 {
			panic(fmt.Sprintf("no progress: state %d, %d buffered, %d of %d fed", p.state, n-r, off, len(in)))
		}
		if n > r {
			k, err := p.Feed(buf[r:n])
			r += k
			used += k
			if err != nil {
				return p.resp, used, err
			}
			if p.Done() {
				break
			}
		}
		n = copy(buf[:], buf[r:n])
		r = 0
		if off == len(in) {
			if err := p.EOF(n - r); err != nil {
				return p.resp, used, err
			}
			break
		}
		k := min(piece, len(in)-off, len(buf)-n)
		n += copy(buf[n:], in[off:off+k])
		off += k
	}
	return p.resp, used, nil
}

func TestRespParser(t *testing.T) {
	for _, tt := range responseCases {
		for _, piece := range []int{1, 3, 7, 100, LineBuf} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, piece), func(t *testing.T) {
				resp, used, err := parseInPieces(tt.in, piece)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("got %+v, %v; want error containing %q", resp, err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp.Status != tt.status || resp.ContentLength != tt.clen || resp.Close != tt.close || used != len(tt.in) {
					t.Fatalf("got %+v using %d of %d bytes, want status %d length %d close %v", resp, used, len(tt.in), tt.status, tt.clen, tt.close)
				}
			})
		}
	}
}

// Two responses back to back (a kept-alive connection): the parser stops at
// the end of the first, and after reset parses the second.
func TestRespParserKeepAlive(t *testing.T) {
	in := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	var p Parser
	n, err := p.Feed(in)
	if err != nil || !p.Done() || p.resp.Status != 200 || n != 40 {
		t.Fatalf("first: used %d, %+v, %v", n, p, err)
	}
	p.Reset()
	m, err := p.Feed(in[n:])
	if err != nil || !p.Done() || p.resp.Status != 404 || n+m != len(in) {
		t.Fatalf("second: used %d, %+v, %v", m, p, err)
	}
}
