package server

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

// ServeService serves service-mode tcp_rr/tcp_crr connections (engine.DecodeSvcPreamble)
// on ln until ctx is cancelled, then closes ln and every connection and
// waits for them. It needs Limits.Token (the preambles are authenticated
// with it). Every connection takes one flow and, once its preamble is
// verified, its buffers from the server's budget (--max-flows,
// --max-buffer-mem, shared with the sessions of Serve); one over budget is
// closed at once. The preamble is bounded by HelloTimeout and silence by
// IdleTimeout. Unlike the session data planes it runs on Go's netpoller:
// its cost per transaction is the same whatever stands between client and
// server, which is what service measurements compare.
func (s *Server) ServeService(ctx context.Context, ln net.Listener) error {
	s.setup()
	if s.lim.Token == "" {
		ln.Close()
		return errors.New("service mode needs a token (--token or " + engine.TokenEnv + "): its port serves anyone who proves it")
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.Logger.Warn("service accept", "err", err)
			time.Sleep(10 * time.Millisecond) // out of descriptors: back off
			continue
		}
		held, err := s.budget.grow(cost{}, cost{flows: 1})
		if err != nil {
			c.Close()
			continue
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			s.budget.release(held)
			c.Close()
			continue
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
			if err := s.serveSvcConn(c, held); err != nil && !errors.Is(err, io.EOF) {
				s.Logger.Debug("service connection", "peer", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// serveSvcConn verifies c's preamble and answers its requests; held is
// what the connection took from the budget so far (it is released).
func (s *Server) serveSvcConn(c net.Conn, held cost) error {
	defer func() { s.budget.release(held) }()
	pre := make([]byte, engine.SvcPreambleLen)
	_ = c.SetReadDeadline(time.Now().Add(s.lim.HelloTimeout))
	if _, err := io.ReadFull(c, pre); err != nil {
		return err
	}
	p, err := engine.DecodeSvcPreamble(s.lim.Token, pre)
	if err != nil {
		return err
	}
	if held, err = s.budget.grow(held, cost{flows: 1, bytes: int64(p.ReqSize + p.RespSize)}); err != nil {
		return err
	}
	if p.Sink {
		// tcp_stream: discard until the client closes; its request size
		// is the read buffer.
		buf := make([]byte, p.ReqSize)
		for {
			_ = c.SetReadDeadline(time.Now().Add(s.lim.IdleTimeout))
			if _, err := c.Read(buf); err != nil {
				return err
			}
		}
	}
	req, resp := make([]byte, p.ReqSize), make([]byte, p.RespSize)
	engine.FillPayload(resp)
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.lim.IdleTimeout))
		if _, err := io.ReadFull(c, req); err != nil {
			return err
		}
		_ = c.SetWriteDeadline(time.Now().Add(s.lim.IdleTimeout))
		if _, err := c.Write(resp); err != nil {
			return err
		}
		if p.OneShot {
			return nil // the server closes first, as tcp_crr expects
		}
	}
}
