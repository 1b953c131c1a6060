package server

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/pkg/result"
)

// startServiceServers starts n service-mode servers on 127.0.0.1 with
// token and returns their addresses; at cleanup they are stopped and must
// return within 5 s.
func startServiceServers(t *testing.T, n int, token string) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		srv := NewServer(nil)
		srv.Limits = Limits{Token: token, HelloTimeout: time.Second}
		done := make(chan error, 1)
		go func() { done <- srv.ServeService(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("service server: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("service server did not stop within 5s")
			}
		})
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

func TestServiceMode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping network integration test")
	}
	addr := startServiceServers(t, 1, "s3cret")[0]
	for _, test := range []string{engine.TCPRR, engine.TCPCRR, engine.TCPStream} {
		cfg := engine.Config{Service: addr, Test: test, Flows: 2, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond,
			Repeat: 2, Timeout: 2 * time.Second, ReqSize: 64, RespSize: 1000}
		res, err := (&client.Client{Token: "s3cret"}).Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", test, err)
		}
		for _, rep := range res.Repeats {
			if rep.Error != "" || rep.Metrics[result.TransPerSec] <= 0 {
				t.Errorf("%s: repeat %+v", test, rep)
			}
			if _, ok := rep.Metrics["server_cpu_pct"]; ok {
				t.Errorf("%s: server CPU reported in service mode", test)
			}
		}
		if res.Config["service"] != addr || !strings.Contains(strings.Join(res.Warnings, " "), "servers' CPU is not measured") {
			t.Errorf("%s: config %v, warnings %v", test, res.Config["service"], res.Warnings)
		}
	}
	// A client with another token: every repeat fails, the run says so.
	cfg := engine.Config{Service: addr, Test: engine.TCPRR, Flows: 1, Duration: 200 * time.Millisecond, Warmup: -1, Repeat: 1, Timeout: time.Second}
	if _, err := (&client.Client{Token: "wrong"}).Run(context.Background(), cfg); err == nil {
		t.Error("wrong token: the run succeeded")
	}
	if _, err := (&client.Client{}).Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--service") || !strings.Contains(err.Error(), "token") {
		t.Errorf("no token: %v, want a --service error naming the token", err)
	}
}

// TestServiceModeHostile: garbage, a wrong token and a silent peer are
// closed without an answer; the server keeps serving.
func TestServiceModeHostile(t *testing.T) {
	addr := startServiceServers(t, 1, "s3cret")[0]
	expectClosed := func(name string, send []byte) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if send != nil {
			_, _ = c.Write(send)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := c.Read(make([]byte, 16))
		if n != 0 || err == nil || !(err == io.EOF || strings.Contains(err.Error(), "reset")) {
			t.Errorf("%s: read %d bytes, %v; want the connection closed without an answer", name, n, err)
		}
	}
	expectClosed("garbage", []byte(strings.Repeat("GET / HTTP/1.1\r\n", 4)))
	wrong, _ := engine.EncodeSvcPreamble("other", engine.SvcPreamble{ReqSize: 1, RespSize: 1 << 20})
	expectClosed("wrong token", append(wrong, 'x'))
	expectClosed("silent (hello timeout 1s)", nil)
	// Still serving.
	good, _ := engine.EncodeSvcPreamble("s3cret", engine.SvcPreamble{ReqSize: 1, RespSize: 3})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(append(good, 'x')); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 3)); err != nil {
		t.Errorf("a good client after the hostile ones: %v", err)
	}
}

// TestServiceModeNeedsToken: a server without a token refuses to serve.
func TestServiceModeNeedsToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := NewServer(nil).ServeService(context.Background(), ln); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("no token: %v", err)
	}
}

func TestServiceConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  engine.Config
		want string
	}{
		{engine.Config{Service: "127.0.0.1:1", Test: engine.HTTP}, "--service 127.0.0.1:1: only tcp_rr, tcp_crr and tcp_stream"},
		{engine.Config{Service: "127.0.0.1:1", Target: "127.0.0.1", Test: engine.TCPRR}, "--target 127.0.0.1: give either"},
		{engine.Config{Service: "127.0.0.1", Test: engine.TCPRR}, "must be HOST:PORT"},
		{engine.Config{Service: "127.0.0.1:1", Test: engine.TCPRR, Rate: 100}, "--rate"},
	} {
		err := engine.Defaults(tc.cfg).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
