package server

// Hostile-peer tests: a peer that is slow, idle, frozen, floods without
// reading, sends garbage or asks for too much must not delay a
// well-behaved client, and the server's threads and memory stay bounded.
// Every test runs the server in this process on loopback, within a
// deadline, and checks the process's thread count and RSS against the
// bounds below (they include the clients' own threads).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

const (
	// maxTestThreads bounds the test process's OS threads: the Go runtime
	// and test harness (~10-30), the well-behaved client's and server's
	// flows (a few each), plus the hostile sessions' flows, which their
	// budget bounds.
	maxTestThreads = 200
	// maxTestRSS bounds the test process's resident memory.
	maxTestRSS = 400 << 20
)

// hostileServer serves on 127.0.0.1 with lim for the test's lifetime.
func hostileServer(t *testing.T, lim Limits) (*Server, string) {
	return startServerWith(t, lim, func(srv *Server) {
		if u := srv.budget.inUse(); u != (cost{}) {
			t.Errorf("budget still held after shutdown: %+v", u)
		}
	})
}

// goodRun is a well-behaved client's short run; it must complete.
func goodRun(t *testing.T, addr string, test string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cfg := engine.Config{Target: addr, Test: test, Flows: 2, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Repeat: 1, Timeout: 2 * time.Second}
	t0 := time.Now()
	res, err := (&client.Client{}).Run(ctx, cfg)
	if err != nil {
		t.Fatalf("well-behaved %s run next to the hostile peer: %v", test, err)
	}
	if res.Repeats[0].Error != "" {
		t.Fatalf("well-behaved %s run: %s", test, res.Repeats[0].Error)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("well-behaved %s run took %v (alone it takes about 0.5s)", test, d)
	}
}

// procStatus returns a field of /proc/self/status as a number.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			n, _ := strconv.ParseInt(f[0], 10, 64)
			if len(f) > 1 && f[1] == "kB" {
				n <<= 10
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

func checkBounds(t *testing.T) {
	t.Helper()
	if n := procStatus(t, "Threads"); n > maxTestThreads {
		t.Errorf("%d threads, bound %d", n, maxTestThreads)
	}
	if n := procStatus(t, "VmRSS"); n > maxTestRSS {
		t.Errorf("RSS %d MiB, bound %d MiB", n>>20, maxTestRSS>>20)
	}
}

// rawSession is a hand-driven control connection.
type rawSession struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawSession {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawSession{t: t, c: c, br: bufio.NewReader(c)}
}

// call sends m and returns the reply (an error reply is returned as such).
func (s *rawSession) call(m *engine.Msg) (*engine.Msg, error) {
	_ = s.c.SetDeadline(time.Now().Add(5 * time.Second))
	defer s.c.SetDeadline(time.Time{})
	if err := engine.WriteMsg(s.c, m); err != nil {
		return nil, err
	}
	return engine.ReadMsg(s.br)
}

func (s *rawSession) hello(h engine.Hello) *engine.Msg {
	s.t.Helper()
	h.Proto, h.Version = engine.ProtoMagic, engine.ProtoVersion
	r, err := s.call(&engine.Msg{Type: engine.MsgHello, Hello: &h})
	if err != nil {
		s.t.Fatalf("hello: %v", err)
	}
	return r
}

// setup opens a data plane and returns its port.
func (s *rawSession) setup(st engine.Setup) int {
	s.t.Helper()
	r, err := s.call(&engine.Msg{Type: engine.MsgSetup, Setup: &st})
	if err != nil || r.Type != engine.MsgReady {
		s.t.Fatalf("setup: %v %+v", err, r)
	}
	return r.Ready.Port
}

// closedWithin waits for the server to close s's connection.
func (s *rawSession) closedWithin(d time.Duration) error {
	_ = s.c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		if _, err := s.c.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("still open after %v", d)
			}
			return nil
		}
	}
}

var rrSetup = engine.Setup{Test: engine.TCPRR, Flows: 2, ReqSize: 1, RespSize: 1, MsgSize: 1, TimeoutMillis: 2000}

func TestHostileSlowAndIdleControl(t *testing.T) {
	srv, addr := hostileServer(t, Limits{HelloTimeout: time.Second, IdleTimeout: time.Second})
	idle := dialRaw(t, addr)                   // says nothing
	slow := dialRaw(t, addr)                   // sends its hello a byte at a time
	quiet := dialRaw(t, addr)                  // says hello, then nothing
	setUp := dialRaw(t, addr)                  // sets a test up, then nothing
	quiet.hello(engine.Hello{})                // no window declared
	setUp.hello(engine.Hello{WindowMillis: 1}) // declares (almost) no window
	setUp.setup(rrSetup)
	stopSlow := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h := frame(fmt.Sprintf(`{"type":"hello","hello":{"proto":"cnibench","version":%d}}`, engine.ProtoVersion))
		for _, b := range h {
			select {
			case <-stopSlow:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if _, err := slow.c.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	defer func() { close(stopSlow); wg.Wait() }()
	goodRun(t, addr, engine.TCPRR)
	for name, s := range map[string]*rawSession{"idle": idle, "slow": slow, "quiet": quiet, "set-up": setUp} {
		if err := s.closedWithin(4 * time.Second); err != nil {
			t.Errorf("%s control connection: %v", name, err)
		}
	}
	checkBounds(t)
	waitFor(t, 2*time.Second, "sessions to end", func() bool { return srv.sessions.Load() == 0 })
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !ok(); {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostileGarbageFrames(t *testing.T) {
	_, addr := hostileServer(t, Limits{HelloTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second})
	// Control port: oversized, truncated, non-JSON, and a huge declared
	// length followed by nothing.
	for name, data := range map[string][]byte{
		"oversized":  {0x7f, 0xff, 0xff, 0xff},
		"just over":  frame(strings.Repeat("x", engine.MaxFrame+1)),
		"not json":   frame("\x00\x01garbage"),
		"http":       []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"wrong type": frame(`{"type":"stats","stats":{}}`),
	} {
		s := dialRaw(t, addr)
		_, _ = s.c.Write(data)
		if err := s.closedWithin(3 * time.Second); err != nil {
			t.Errorf("%s frame: %v", name, err)
		}
	}
	// Data port: garbage and an oversized burst on a session's tcp_rr port.
	s := dialRaw(t, addr)
	s.hello(engine.Hello{WindowMillis: 5000})
	port := s.setup(engine.Setup{Test: engine.TCPRR, Flows: 1, ReqSize: 100, RespSize: 1, MsgSize: 1, TimeoutMillis: 2000})
	d, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_ = d.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, _ = d.Write(make([]byte, 1<<20))
	goodRun(t, addr, engine.TCPRR)
	checkBounds(t)
}

// TestHostileFloodWithoutReading: a peer sends requests on a tcp_rr port
// and never reads the responses, so the server's send buffer fills. Its
// worker must wait where the Go scheduler knows (a raw blocking write
// would stall every garbage collection, and so every session).
func TestHostileFloodWithoutReading(t *testing.T) {
	_, addr := hostileServer(t, Limits{IdleTimeout: 2 * time.Second})
	s := dialRaw(t, addr)
	s.hello(engine.Hello{WindowMillis: 10000})
	port := s.setup(engine.Setup{Test: engine.TCPRR, Flows: 1, ReqSize: 1, RespSize: sock.SmallWrite, MsgSize: 1, TimeoutMillis: 2000})
	d, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_ = d.(*net.TCPConn).SetReadBuffer(4096)
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		_ = d.SetWriteDeadline(time.Now().Add(1500 * time.Millisecond))
		for {
			if _, err := d.Write(make([]byte, 64<<10)); err != nil {
				return
			}
		}
	}()
	<-flooded // the server is now stuck answering
	// A stop-the-world cannot preempt a thread inside a raw system call:
	// if the worker blocked there, every collection would wait for it.
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		runtime.GC()
		if d := time.Since(t0); d > 250*time.Millisecond {
			t.Errorf("garbage collection took %v behind a flooded data connection", d)
		}
	}
	t0 := time.Now()
	goodRun(t, addr, engine.TCPRR)
	t.Logf("good run took %v", time.Since(t0))
	checkBounds(t)
	// The flooding connection is dropped once it has read nothing for the
	// idle timeout (its state turns to CLOSE or CLOSE_WAIT); the session's
	// own control connection stays.
	raw, err := d.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 8*time.Second, "the flooding connection to be dropped", func() bool {
		var st uint8
		_ = raw.Control(func(fd uintptr) {
			if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				st = ti.State
			}
		})
		return st == unix.BPF_TCP_CLOSE || st == unix.BPF_TCP_CLOSE_WAIT
	})
	if r, err := s.call(&engine.Msg{Type: engine.MsgTeardown}); err != nil || r.Type != engine.MsgDone {
		t.Fatalf("the flooding session's control connection: %v %+v", err, r)
	}
}

func TestHostileHalfOpenConnections(t *testing.T) {
	const n = 300
	srv, addr := hostileServer(t, Limits{MaxPending: 128, HelloTimeout: 3 * time.Second})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i%2 == 0 {
			_, _ = c.Write([]byte{0, 0, 1}) // half a header
		}
		conns = append(conns, c)
	}
	waitFor(t, 2*time.Second, "pending connections to be capped", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.pending.Len() <= 128
	})
	goodRun(t, addr, engine.TCPCRR)
	checkBounds(t)
}

// TestHostileFrozenClient: a client stops in the middle of a window (as
// under SIGSTOP: its sockets stay open, nothing is read or sent). The
// server drops its data connections after the idle timeout and its session
// after the declared window plus the idle timeout, and returns its budget.
func TestHostileFrozenClient(t *testing.T) {
	srv, addr := hostileServer(t, Limits{IdleTimeout: time.Second})
	s := dialRaw(t, addr)
	s.hello(engine.Hello{WindowMillis: 500, Reserve: &rrSetup})
	port := s.setup(rrSetup)
	var data []net.Conn
	for i := 0; i < rrSetup.Flows; i++ {
		d, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		_, _ = d.Write([]byte{1})
		data = append(data, d)
	}
	if r, err := s.call(&engine.Msg{Type: engine.MsgStart}); err != nil || r.Type != engine.MsgStarted {
		t.Fatalf("start: %v %+v", err, r)
	}
	if srv.budget.inUse().flows == 0 {
		t.Fatal("the session holds no budget")
	}
	// Frozen from here on. A well-behaved client is served meanwhile.
	goodRun(t, addr, engine.TCPRR)
	for i, d := range data {
		_ = d.SetReadDeadline(time.Now().Add(4 * time.Second))
		buf := make([]byte, 16)
		var err error
		for err == nil {
			_, err = d.Read(buf)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("data connection %d still open 4s after its client froze", i)
		}
	}
	if err := s.closedWithin(4 * time.Second); err != nil {
		t.Errorf("frozen client's control connection: %v", err)
	}
	waitFor(t, 2*time.Second, "the frozen session's budget to be returned", func() bool { return srv.budget.inUse() == (cost{}) })
	checkBounds(t)
}

// TestHostileClientProcess is the client process of
// TestHostileStoppedClientProcess; it does nothing in a normal test run.
func TestHostileClientProcess(t *testing.T) {
	addr := os.Getenv("CNIBENCH_HOSTILE_CLIENT")
	if addr == "" {
		t.Skip("helper process of TestHostileStoppedClientProcess")
	}
	cfg := engine.Config{Target: addr, Test: engine.TCPRR, Flows: 4, Duration: time.Second, Warmup: 200 * time.Millisecond, Repeat: 30, Timeout: 2 * time.Second}
	_, _ = (&client.Client{}).Run(context.Background(), cfg)
}

// TestHostileStoppedClientProcess: a `cnibench run`-like client process is
// stopped with SIGSTOP in the middle of its run. Another client is served
// meanwhile, and the stopped one's session ends within its declared window
// plus the idle timeout, returning its budget.
func TestHostileStoppedClientProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	srv, addr := hostileServer(t, Limits{IdleTimeout: time.Second})
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHostileClientProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CNIBENCH_HOSTILE_CLIENT="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Wait()
	}()
	waitFor(t, 10*time.Second, "the client's flows to be running", func() bool { return srv.budget.inUse().flows == 4 })
	time.Sleep(700 * time.Millisecond) // well into a window
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	goodRun(t, addr, engine.TCPRR)
	// Declared window 2.2s (warm-up + duration + 1s) plus the idle timeout.
	waitFor(t, 6*time.Second, "the stopped client's session to end", func() bool { return srv.budget.inUse() == (cost{}) })
	t.Logf("the stopped client's session ended %v after SIGSTOP", time.Since(stopped).Round(100*time.Millisecond))
	checkBounds(t)
}
