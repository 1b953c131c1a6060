package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

// ServeHTTPBody serves every GET on ln with a body of size bytes until ctx
// is cancelled (issue 11: the backends of a load-balanced service, for the
// http test's --url mode, which needs no session). Every connection takes
// one flow from the server's budget (--max-flows, shared with Serve and
// ServeService) while it is open; one over budget is closed at once.
// Headers must arrive within HelloTimeout and a connection silent for
// IdleTimeout is closed. The body is fixed bytes: nothing a client sends
// reaches anything but net/http's request parser.
func (s *Server) ServeHTTPBody(ctx context.Context, ln net.Listener, size int) error {
	s.setup()
	if size < 0 || size > engine.MaxHTTPBody {
		ln.Close()
		return &engine.FieldError{Field: "http-body", Value: strconv.Itoa(size), Fix: "must be between 0 and " + strconv.Itoa(engine.MaxHTTPBody) + " bytes"}
	}
	bl := &budgetListener{Listener: ln, s: s, held: map[net.Conn]cost{}}
	srv := &http.Server{
		Handler:           BodyHandler(size, nil),
		ReadHeaderTimeout: s.lim.HelloTimeout,
		IdleTimeout:       s.lim.IdleTimeout,
		WriteTimeout:      s.lim.IdleTimeout,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				bl.release(c)
			}
		},
	}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	})
	defer stop()
	if err := srv.Serve(bl); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// budgetListener charges every accepted connection one flow of the
// server's budget until net/http reports it closed.
type budgetListener struct {
	net.Listener
	s    *Server
	mu   sync.Mutex
	held map[net.Conn]cost
}

func (l *budgetListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		h, err := l.s.budget.grow(cost{}, cost{flows: 1})
		if err != nil {
			c.Close()
			continue
		}
		l.mu.Lock()
		l.held[c] = h
		l.mu.Unlock()
		return c, nil
	}
}

func (l *budgetListener) release(c net.Conn) {
	l.mu.Lock()
	h, ok := l.held[c]
	delete(l.held, c)
	l.mu.Unlock()
	if ok {
		l.s.budget.release(h)
	}
}
