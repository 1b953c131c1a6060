package agent

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A closed port: listen, note the port, close.
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := cl.Addr().String()
	cl.Close()

	ctx := context.Background()
	r := RunConnect(ctx, ln.Addr().String(), time.Second, 3)
	if r.Schema != SchemaConnect || r.Attempts != 3 || r.Connected != 3 || len(r.RTTMicros) != 3 ||
		len(r.Errors) != 0 || r.Refused != 0 || r.TimeoutMS != 1000 || r.Addr != ln.Addr().String() {
		t.Errorf("listener: %+v", r)
	}
	r = RunConnect(ctx, closed, time.Second, 4)
	if r.Attempts != 4 || r.Connected != 0 || r.Refused != 4 || r.TimedOut != 0 || len(r.RTTMicros) != 0 ||
		len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "connection refused") {
		t.Errorf("closed port: %+v", r)
	}
	// A name, resolved once.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if r = RunConnect(ctx, "localhost:"+port, time.Second, 1); r.Connected != 1 && !strings.HasPrefix(r.Addr, "[::1]") {
		t.Errorf("localhost: %+v", r)
	}
	// Not HOST:PORT, an unknown name: no attempt, the error.
	if r = RunConnect(ctx, "nocolon", time.Second, 2); r.Attempts != 0 || len(r.Errors) != 1 {
		t.Errorf("bad target: %+v", r)
	}
	if r = RunConnect(ctx, "no-such-host.invalid:80", time.Second, 2); r.Attempts != 0 || len(r.Errors) != 1 {
		t.Errorf("unknown name: %+v", r)
	}
	// An ended context stops the attempts.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r = RunConnect(cctx, ln.Addr().String(), time.Second, 5); r.Attempts != 0 {
		t.Errorf("cancelled: %+v", r)
	}
}
