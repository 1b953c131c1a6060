package servecmd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/server"
)

func validFlags() flagpole {
	d := server.DefaultLimits()
	return flagpole{MaxSessions: d.MaxSessions, MaxPending: d.MaxPending, MaxFlows: d.MaxFlows, MaxBufferMem: "256M",
		HelloTimeout: d.HelloTimeout, IdleTimeout: d.IdleTimeout, MaxWindow: d.MaxWindow}
}

func TestLimitFlags(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*flagpole)
		want string // error substring; "" = valid
	}{
		{"defaults", func(*flagpole) {}, ""},
		{"zero sessions", func(f *flagpole) { f.MaxSessions = 0 }, "--max-sessions 0: must be at least 1"},
		{"negative flows", func(f *flagpole) { f.MaxFlows = -1 }, "--max-flows -1"},
		{"bad memory", func(f *flagpole) { f.MaxBufferMem = "lots" }, "--max-buffer-mem lots"},
		{"tiny memory", func(f *flagpole) { f.MaxBufferMem = "1K" }, "at least 1M"},
		{"short idle", func(f *flagpole) { f.IdleTimeout = time.Millisecond }, "--idle-timeout 1ms"},
	}
	for _, tc := range tests {
		f := validFlags()
		tc.mod(&f)
		_, err := f.limits()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestTokenFromEnv(t *testing.T) {
	t.Setenv(engine.TokenEnv, "from-env")
	f := validFlags()
	lim, err := f.limits()
	if err != nil || lim.Token != "from-env" {
		t.Fatalf("token from %s: %q, %v", engine.TokenEnv, lim.Token, err)
	}
	f.Token = "from-flag"
	if lim, _ := f.limits(); lim.Token != "from-flag" {
		t.Fatalf("--token must win over the environment, got %q", lim.Token)
	}
	if lim.MaxBufferBytes != 256<<20 {
		t.Fatalf("--max-buffer-mem 256M = %d bytes", lim.MaxBufferBytes)
	}
}

// --service-listen takes several addresses: each gets a listener, and a
// bad one is a usage error naming it (after the good ones were closed).
func TestServiceListenSeveral(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--listen", "127.0.0.1:0", "--token", "t", "--service-listen", "127.0.0.1:0,127.0.0.1:bad"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	var ue *clierr.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--service-listen 127.0.0.1:bad") {
		t.Fatalf("err = %v", err)
	}

	// Two good ones: both answer; the server stops with its context.
	ctx, cancel := context.WithCancel(context.Background())
	lns := []net.Listener{}
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		ln.Close() // free the ports for the command
	}
	cmd = NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--listen", "127.0.0.1:0", "--token", "t", "--service-listen", strings.Join(addrs, ",")})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	for _, a := range addrs {
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("service listener %s: %v", a, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop with its context")
	}
}
