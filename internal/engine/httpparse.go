package engine

import (
	"bytes"
	"fmt"
	"io"
)

// respParser is an incremental HTTP/1.1 response parser for the epoll
// client (httpepoll_linux.go): bytes are fed as they arrive, in any pieces,
// and the response is complete when done reports true. It applies the same
// rules as readResponseHead/readBody (parseStatusLine, parseHeaderLine,
// parseChunkSize; lines end in CRLF or LF; a line must fit httpLineBuf
// bytes, as in the goroutine client's 4 KiB bufio.Reader) and discards the
// body.
type respParser struct {
	state  parseState
	resp   httpResponse
	lines  int   // header lines so far
	remain int64 // body or chunk bytes still to discard
	// started: at least one byte of this response was seen (EOF before any
	// is io.EOF, after some io.ErrUnexpectedEOF).
	started bool
}

type parseState uint8

const (
	psStatus     parseState = iota // status line
	psHeader                       // header lines until an empty one
	psBody                         // remain bytes of a Content-Length body
	psUntilClose                   // body until the server closes
	psChunkSize                    // chunk-size line
	psChunkData                    // remain bytes of chunk data
	psChunkCRLF                    // the empty line after chunk data
	psTrailer                      // trailer lines until an empty one
	psDone
)

// httpLineBuf is the longest line (with its LF) either client accepts: the
// goroutine client's bufio.Reader size, and the epoll client's buffer.
const httpLineBuf = 4096

func (p *respParser) reset() { *p = respParser{} }

func (p *respParser) done() bool { return p.state == psDone }

// inBody reports whether the head has been parsed (errors are then the
// body's).
func (p *respParser) inBody() bool { return p.state >= psBody }

// feed consumes bytes of the response from b and returns how many it used:
// all of b unless the response completed (then the rest is not its) or b
// ends in an incomplete line (the caller keeps it and feeds it again with
// more bytes after it).
func (p *respParser) feed(b []byte) (int, error) {
	n := 0
	if len(b) > 0 {
		p.started = true
	}
	for n < len(b) && p.state != psDone {
		switch p.state {
		case psBody, psChunkData:
			k := int64(len(b) - n)
			if k > p.remain {
				k = p.remain
			}
			n += int(k)
			p.remain -= k
			if p.remain == 0 {
				if p.state == psBody {
					p.state = psDone
				} else {
					p.state = psChunkCRLF
				}
			}
		case psUntilClose:
			n = len(b)
		default:
			i := bytes.IndexByte(b[n:], '\n')
			if i < 0 {
				if len(b)-n >= httpLineBuf {
					return n, fmt.Errorf("%w: line longer than %d bytes", errBadResponse, httpLineBuf)
				}
				return n, nil
			}
			if i+1 > httpLineBuf {
				return n, fmt.Errorf("%w: line longer than %d bytes", errBadResponse, httpLineBuf)
			}
			line := b[n : n+i]
			n += i + 1
			if k := len(line); k > 0 && line[k-1] == '\r' {
				line = line[:k-1]
			}
			if err := p.line(line); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// line handles one complete line in a line state.
func (p *respParser) line(line []byte) error {
	switch p.state {
	case psStatus:
		resp, err := parseStatusLine(line)
		if err != nil {
			return err
		}
		p.resp, p.state = resp, psHeader
	case psHeader:
		if len(line) == 0 {
			p.startBody()
			return nil
		}
		p.lines++
		if p.lines > maxHeaderLines {
			return errTooManyHeaders
		}
		return parseHeaderLine(&p.resp, line)
	case psChunkSize:
		size, err := parseChunkSize(line)
		if err != nil {
			return err
		}
		if size == 0 {
			p.state = psTrailer
		} else {
			p.state, p.remain = psChunkData, size
		}
	case psChunkCRLF:
		if len(line) != 0 {
			return fmt.Errorf("%w: missing CRLF after chunk", errBadResponse)
		}
		p.state = psChunkSize
	case psTrailer:
		if len(line) == 0 {
			p.state = psDone
		}
	}
	return nil
}

// startBody picks the body's framing once the head is complete, as readBody
// does.
func (p *respParser) startBody() {
	r := p.resp
	switch {
	case !r.hasBody():
		p.state = psDone
	case r.Chunked:
		p.state = psChunkSize
	case r.ContentLength == 0:
		p.state = psDone
	case r.ContentLength > 0:
		p.state, p.remain = psBody, r.ContentLength
	default:
		p.state = psUntilClose
	}
}

// eof is called when the server closed the connection with pending, the
// bytes fed but not consumed (an incomplete line): it completes a body
// delimited by the close, or returns the error the goroutine client would.
func (p *respParser) eof(pending int) error {
	switch {
	case p.state == psUntilClose:
		p.state = psDone
		return nil
	case p.state == psDone:
		return nil
	case !p.started && pending == 0:
		return io.EOF
	default:
		return io.ErrUnexpectedEOF
	}
}
