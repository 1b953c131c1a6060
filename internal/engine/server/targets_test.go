package server

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/pkg/result"
)

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// startCounted starts n servers with serve on counting listeners.
func startCounted(t *testing.T, n int, serve func(*Server, context.Context, net.Listener) error) ([]string, []*countingListener) {
	t.Helper()
	var addrs []string
	var lns []*countingListener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl := &countingListener{Listener: ln}
		ctx, cancel := context.WithCancel(context.Background())
		srv := NewServer(nil)
		srv.Limits = Limits{Token: "s3cret", HelloTimeout: time.Second}
		done := make(chan error, 1)
		go func() { done <- serve(srv, ctx, cl) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Error("server did not stop within 5s")
			}
		})
		addrs, lns = append(addrs, ln.Addr().String()), append(lns, cl)
	}
	return addrs, lns
}

// TestSeveralDestinations: with a list of --service addresses or --url
// URLs, connections take them in turn (every destination serves some).
func TestSeveralDestinations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping network integration test")
	}
	svc, svcLns := startCounted(t, 3, func(s *Server, ctx context.Context, ln net.Listener) error { return s.ServeService(ctx, ln) })
	web, webLns := startCounted(t, 2, func(s *Server, ctx context.Context, ln net.Listener) error { return s.ServeHTTPBody(ctx, ln, 100) })
	var urls []string
	for _, a := range web {
		urls = append(urls, "http://"+a+"/x")
	}
	tests := []struct {
		name string
		cfg  engine.Config
		lns  []*countingListener
	}{
		{"tcp_crr", engine.Config{Service: strings.Join(svc, ","), Test: engine.TCPCRR, Flows: 1}, svcLns},
		{"tcp_rr", engine.Config{Service: strings.Join(svc, ","), Test: engine.TCPRR, Flows: 3}, svcLns},
		{"http", engine.Config{URL: strings.Join(urls, ","), Test: engine.HTTP, Flows: 4}, webLns},
	}
	for _, tt := range tests {
		for _, l := range tt.lns {
			l.n.Store(0)
		}
		cfg := tt.cfg
		cfg.Duration, cfg.Warmup, cfg.Repeat, cfg.Timeout = 200*time.Millisecond, 20*time.Millisecond, 1, 2*time.Second
		res, err := (&client.Client{Token: "s3cret"}).Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if rep := res.Repeats[0]; rep.Error != "" || rep.Metrics[result.TransPerSec] <= 0 {
			t.Errorf("%s: repeat %+v", tt.name, rep)
		}
		for i, l := range tt.lns {
			if l.n.Load() == 0 {
				t.Errorf("%s: destination %d got no connection", tt.name, i)
			}
		}
	}
}

func TestSeveralDestinationsValidate(t *testing.T) {
	base := engine.Config{Test: engine.TCPRR, Flows: 1, Duration: time.Second, Repeat: 1}
	tests := []struct {
		edit func(*engine.Config)
		want string
	}{
		{func(c *engine.Config) { c.Service = "1.2.3.4:5,1.2.3.5:5" }, ""},
		{func(c *engine.Config) { c.Service = "1.2.3.4:5,1.2.3.5" }, "--service"},
		{func(c *engine.Config) { c.Service = "1.2.3.4:5," }, "--service"},
		{func(c *engine.Config) { c.Test = engine.HTTP; c.URL = "http://a:1/x,http://b:1/x" }, ""},
		{func(c *engine.Config) { c.Test = engine.HTTP; c.URL = "http://a:1/x,http://b:1/y" }, "same path"},
		{func(c *engine.Config) { c.Test = engine.HTTP; c.URL = "http://a:1/x,ftp://b" }, "--url"},
	}
	for _, tt := range tests {
		c := base
		tt.edit(&c)
		c = engine.Defaults(c)
		err := c.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s/%s: error %v, want %q", c.Service, c.URL, err, tt.want)
		}
	}
}
