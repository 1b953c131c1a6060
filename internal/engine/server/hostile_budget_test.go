package server

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

func TestHostileOverBudget(t *testing.T) {
	srv, addr := hostileServer(t, Limits{MaxFlows: 8, MaxSessions: 3, MaxBufferBytes: 4 << 20})
	run := func(cfg engine.Config) error {
		cfg.Target, cfg.Duration, cfg.Warmup, cfg.Repeat, cfg.Timeout = addr, 200*time.Millisecond, -1, 1, 2*time.Second
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err := (&client.Client{}).Run(ctx, cfg)
		return err
	}
	err := run(engine.Config{Test: engine.TCPRR, Flows: 16})
	if want := "server refused: flows 16 exceed the server's free budget of 8 (cnibench serve --max-flows)"; err == nil || err.Error() != want {
		t.Fatalf("over the flow budget: got %v, want %q", err, want)
	}
	err = run(engine.Config{Test: engine.TCPStream, Flows: 8, MsgSize: 1 << 20})
	if err == nil || !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "--max-buffer-mem") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("over the memory budget: got %v", err)
	}
	// Two sessions hold 6 of the 8 flows; a third asking for 4 is refused,
	// one asking for 2 is served. The refused runs' sessions end when
	// their connections close, which a loaded host may not have seen yet.
	waitFor(t, 2*time.Second, "refused runs' sessions to end", func() bool { return srv.sessions.Load() == 0 })
	for i := 0; i < 2; i++ {
		s := dialRaw(t, addr)
		if r := s.hello(engine.Hello{Reserve: &engine.Setup{Test: engine.TCPRR, Flows: 3, ReqSize: 1, RespSize: 1, MsgSize: 1}}); r.Type != engine.MsgHello {
			t.Fatalf("reservation %d refused: %+v", i, r)
		}
	}
	if err := run(engine.Config{Test: engine.TCPRR, Flows: 4}); !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "free budget of 2") {
		t.Fatalf("over the rest of the budget: got %v", err)
	}
	// The refused run's session ends when its connection closes (a loaded
	// host may not have seen it yet): until then it is the third of three.
	waitFor(t, 2*time.Second, "the refused run's session to end", func() bool { return srv.sessions.Load() == 2 })
	if err := run(engine.Config{Test: engine.TCPRR, Flows: 2}); err != nil {
		t.Fatalf("within the rest of the budget: %v", err)
	}
	// A fourth session over --max-sessions (3).
	waitFor(t, 2*time.Second, "finished runs' sessions to end", func() bool { return srv.sessions.Load() == 2 })
	s := dialRaw(t, addr)
	if r := s.hello(engine.Hello{}); r.Type != engine.MsgHello {
		t.Fatalf("third session refused: %+v", r)
	}
	if err := run(engine.Config{Test: engine.TCPRR, Flows: 1}); !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "--max-sessions") {
		t.Fatalf("over the session cap: got %v", err)
	}
	// A session may not grow past its reservation into others' budget.
	if r, _ := s.call(&engine.Msg{Type: engine.MsgSetup, Setup: &engine.Setup{Test: engine.TCPRR, Flows: 8, ReqSize: 1, RespSize: 1, MsgSize: 1}}); r == nil || r.Code != engine.CodeRefused {
		t.Fatalf("setup over the budget: got %+v", r)
	}
	checkBounds(t)
}

func TestTokenRequired(t *testing.T) {
	_, addr := hostileServer(t, Limits{Token: "s3cret"})
	for _, tc := range []struct{ token, want string }{
		{"", "requires a token"},
		{"wrong", "wrong token"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := (&client.Client{Token: tc.token}).Run(ctx, quick(addr, engine.TCPRR, 1))
		cancel()
		if !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("token %q: got %v", tc.token, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := (&client.Client{Token: "s3cret"}).Run(ctx, quick(addr, engine.TCPRR, 1)); err != nil {
		t.Fatalf("right token: %v", err)
	}
}

// TestDataFromOtherAddressRefused: a data connection to a session's port
// from another address than its control peer's is closed at once.
func TestDataFromOtherAddressRefused(t *testing.T) {
	_, addr := hostileServer(t, Limits{})
	for _, st := range []engine.Setup{rrSetup, {Test: engine.HTTP, Flows: 1, ReqSize: 1, RespSize: 1, MsgSize: 1, HTTPBody: 10}} {
		s := dialRaw(t, addr)
		s.hello(engine.Hello{WindowMillis: 5000})
		port := s.setup(st)
		dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
		d, err := dl.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Skipf("cannot dial from 127.0.0.2: %v", err)
		}
		_, _ = d.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		_ = d.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := d.Read(make([]byte, 64))
		d.Close()
		var ne net.Error
		if n > 0 || (errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("%s: a connection from 127.0.0.2 was served (n=%d, err=%v)", st.Test, n, err)
		}
	}
	goodRun(t, addr, engine.TCPRR)
}

// TestSendSmallNeverBlocks: the raw send of the data plane's fast path
// returns at once on a full send buffer (a raw blocking write would park
// its thread where the garbage collector cannot stop it), and sock.WriteSmall
// then waits in a scheduler-aware write.
func TestSendSmallNeverBlocks(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	// Fill fds[0]'s send buffer, then make it blocking again, without a
	// send timeout, as the server's sockets were.
	_ = unix.SetNonblock(fds[0], true)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := unix.Write(fds[0], chunk); err != nil {
			break
		}
	}
	_ = unix.SetNonblock(fds[0], false)
	done := make(chan int, 1)
	go func() {
		n, _ := sock.SendSmall(fds[0], make([]byte, sock.SmallWrite))
		done <- n
	}()
	select {
	case n := <-done:
		if n == sock.SmallWrite {
			t.Fatalf("sent %d bytes into a full buffer", n)
		}
	case <-time.After(2 * time.Second):
		unix.Shutdown(fds[1], unix.SHUT_RDWR) // unblock it
		t.Fatal("sock.SendSmall blocked on a full send buffer")
	}
	// sock.WriteSmall finishes once the peer reads.
	go func() {
		buf := make([]byte, 1<<20)
		for {
			if n, err := unix.Read(fds[1], buf); n <= 0 || err != nil {
				return
			}
		}
	}()
	if err := sock.WriteSmall(fds[0], make([]byte, sock.SmallWrite)); err != nil {
		t.Fatalf("sock.WriteSmall: %v", err)
	}
}
