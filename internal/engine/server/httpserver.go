package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// httpServer serves GET requests with a fixed-size body over Go's
// net/http, the same server for cnibench's client and for peers (hey, wrk)
// in `make bench`.
type httpServer struct {
	srv   *http.Server
	ln    net.Listener
	trans atomic.Uint64
	done  chan struct{}
}

func newHTTPServer(ctx context.Context, si sessionInfo, s *engine.Setup, log *slog.Logger) (*httpServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(si.Local.String(), "0"))
	if err != nil {
		return nil, err
	}
	idle := si.Idle
	if idle <= 0 {
		idle = DefaultLimits().IdleTimeout
	}
	hs := &httpServer{ln: &peerListener{Listener: ln, peer: si.Peer, log: log}, done: make(chan struct{})}
	hs.srv = &http.Server{
		Handler:           BodyHandler(s.HTTPBody, &hs.trans),
		ReadHeaderTimeout: min(idle, 10*time.Second),
		IdleTimeout:       idle,
		// A response is written within idle or the connection is
		// dropped: a peer that sends requests without reading the
		// answers cannot hold a connection forever.
		WriteTimeout:   idle,
		MaxHeaderBytes: 8 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		BaseContext:    func(net.Listener) context.Context { return ctx },
	}
	go func() {
		defer close(hs.done)
		if err := hs.srv.Serve(hs.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Debug("http data plane stopped", "err", err)
		}
	}()
	return hs, nil
}

// BodyHandler answers every request with size bytes ('x', with copies of
// PayloadMarker: FillPayload) and counts it.
func BodyHandler(size int, count *atomic.Uint64) http.Handler {
	body := make([]byte, size)
	for i := range body {
		body[i] = 'x'
	}
	engine.FillPayload(body)
	clen := strconv.Itoa(size)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/octet-stream"}
		h["Content-Length"] = []string{clen}
		_, _ = w.Write(body)
		if count != nil {
			count.Add(1)
		}
	})
}

func (hs *httpServer) Port() int { return hs.ln.Addr().(*net.TCPAddr).Port }

func (hs *httpServer) Counters() window.SrvCounters {
	return window.SrvCounters{Trans: hs.trans.Load()}
}

func (hs *httpServer) Close() {
	_ = hs.srv.Close()
	<-hs.done
}

// peerListener accepts connections from the session's peer only; others
// are closed at once (net/http would otherwise answer them).
type peerListener struct {
	net.Listener
	peer    netip.Addr
	log     *slog.Logger
	refused atomic.Uint64
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.peer.IsValid() || l.peer.IsUnspecified() || addrOf(c.RemoteAddr()) == l.peer {
			return c, nil
		}
		c.Close()
		if l.refused.Add(1) == 1 {
			l.log.Warn("refused an http connection from another address than the session's peer", "peer", l.peer)
		}
	}
}
