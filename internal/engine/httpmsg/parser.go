package httpmsg

import (
	"bytes"
	"fmt"
	"io"
)

// Parser is an incremental HTTP/1.1 response parser for the epoll
// client: bytes are fed as they arrive, in any pieces, and the response is
// complete when Done reports true. It applies the same
// rules as ReadHead/ReadBody (parseStatusLine, parseHeaderLine,
// parseChunkSize; lines end in CRLF or LF; a line must fit LineBuf
// bytes, as in the goroutine client's 4 KiB bufio.Reader) and discards the
// body.
type Parser struct {
	state  parseState
	resp   Response
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

// LineBuf is the longest line (with its LF) either client accepts: the
// goroutine client's bufio.Reader size, and the epoll client's buffer.
const LineBuf = 4096

// Reset makes p ready for the next response.
func (p *Parser) Reset() { *p = Parser{} }

// Done reports whether the response is complete.
func (p *Parser) Done() bool { return p.state == psDone }

// Response is the response head parsed so far.
func (p *Parser) Response() Response { return p.resp }

// InBody reports whether the head has been parsed (errors are then the
// body's).
func (p *Parser) InBody() bool { return p.state >= psBody }

// Feed consumes bytes of the response from b and returns how many it used:
// all of b unless the response completed (then the rest is not its) or b
// ends in an incomplete line (the caller keeps it and feeds it again with
// more bytes after it).
func (p *Parser) Feed(b []byte) (int, error) {
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
				if len(b)-n >= LineBuf {
					return n, fmt.Errorf("%w: line longer than %d bytes", ErrBadResponse, LineBuf)
				}
				return n, nil
			}
			if i+1 > LineBuf {
				return n, fmt.Errorf("%w: line longer than %d bytes", ErrBadResponse, LineBuf)
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
func (p *Parser) line(line []byte) error {
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
			return fmt.Errorf("%w: missing CRLF after chunk", ErrBadResponse)
		}
		p.state = psChunkSize
	case psTrailer:
		if len(line) == 0 {
			p.state = psDone
		}
	}
	return nil
}

// startBody picks the body's framing once the head is complete, as ReadBody
// does.
func (p *Parser) startBody() {
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

// EOF is called when the server closed the connection with pending, the
// bytes fed but not consumed (an incomplete line): it completes a body
// delimited by the close, or returns the error the goroutine client would.
func (p *Parser) EOF(pending int) error {
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
