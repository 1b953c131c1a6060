package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ServeService serves service-mode tcp_rr/tcp_crr connections (svcrr.go)
// on ln until ctx is cancelled, then closes ln and every connection and
// waits for them. It needs Limits.Token (the preambles are authenticated
// with it). Connections are bounded by MaxFlows, their buffers by
// MaxBufferBytes (a connection over either is closed at once), the
// preamble by HelloTimeout and silence by IdleTimeout. Unlike the session
// data planes it runs on Go's netpoller: its cost per transaction is the
// same whatever stands between client and server, which is what service
// measurements compare.
func (s *Server) ServeService(ctx context.Context, ln net.Listener) error {
	lim := s.Limits.withDefaults()
	if lim.Token == "" {
		ln.Close()
		return errors.New("service mode needs a token (--token or " + TokenEnv + "): its port serves anyone who proves it")
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
		n     atomic.Int64
		mem   atomic.Int64
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
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			s.Logger.Warn("service accept", "err", err)
			time.Sleep(10 * time.Millisecond) // out of descriptors: back off
			continue
		}
		if n.Add(1) > int64(lim.MaxFlows) {
			n.Add(-1)
			c.Close()
			continue
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			n.Add(-1)
			c.Close()
			continue
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer n.Add(-1)
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
			if err := serveSvcConn(c, lim, &mem); err != nil && !errors.Is(err, io.EOF) {
				s.Logger.Debug("service connection", "peer", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// serveSvcConn verifies c's preamble and answers its requests.
func serveSvcConn(c net.Conn, lim Limits, mem *atomic.Int64) error {
	pre := make([]byte, svcPreambleLen)
	_ = c.SetReadDeadline(time.Now().Add(lim.HelloTimeout))
	if _, err := io.ReadFull(c, pre); err != nil {
		return err
	}
	p, err := decodeSvcPreamble(lim.Token, pre)
	if err != nil {
		return err
	}
	size := int64(p.ReqSize + p.RespSize)
	if mem.Add(size) > lim.MaxBufferBytes {
		mem.Add(-size)
		return errors.New("service connection refused: --max-buffer-mem reached")
	}
	defer mem.Add(-size)
	req, resp := make([]byte, p.ReqSize), make([]byte, p.RespSize)
	for {
		_ = c.SetReadDeadline(time.Now().Add(lim.IdleTimeout))
		if _, err := io.ReadFull(c, req); err != nil {
			return err
		}
		_ = c.SetWriteDeadline(time.Now().Add(lim.IdleTimeout))
		if _, err := c.Write(resp); err != nil {
			return err
		}
		if p.OneShot {
			return nil // the server closes first, as tcp_crr expects
		}
	}
}
