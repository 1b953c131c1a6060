package profile

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/google/pprof/profile"
)

// spinSink keeps profileTestSpin's loop from being optimised away.
var spinSink atomic.Uint64

// profileTestSpin burns CPU until stop is closed; the live test looks for
// it by name in the profile.
//
//go:noinline
func profileTestSpin(stop <-chan struct{}) {
	x := uint64(1)
	for {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		spinSink.Store(x)
		select {
		case <-stop:
			return
		default:
		}
	}
}

// loopbackTransfer streams bytes over a loopback TCP connection until stop
// is closed and returns how many were received.
func loopbackTransfer(tb testing.TB, stop <-chan struct{}) func() int64 {
	tb.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	var got atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 128<<10)
		for {
			n, err := c.Read(buf)
			got.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 128<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	return func() int64 { wg.Wait(); return got.Load() }
}

func TestLiveProfile(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	s, err := Start(Options{Paused: true})
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); profileTestSpin(stop) }()
	wait := loopbackTransfer(t, stop)
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if wait() == 0 {
		t.Fatal("the loopback transfer moved no bytes")
	}
	p, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.P.CheckValid(); err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
	t.Logf("samples %d lost %d window %v cpus %d", p.Samples, p.Lost, p.Window, p.CPUs)
	if p.Samples == 0 {
		t.Fatal("no samples")
	}
	if p.Window < 900*time.Millisecond || p.Window > 3*time.Second {
		t.Errorf("window %v, want about 1s (enabled time of the events)", p.Window)
	}
	// A 1 s window at 999 Hz on every CPU: expect most of those samples.
	want := int(float64(p.Frequency*p.CPUs) * p.Window.Seconds())
	if p.Samples < want/2 || p.Samples > want*3/2 {
		t.Errorf("%d samples, want about %d (%d Hz × %d CPUs × %v)", p.Samples, want, p.Frequency, p.CPUs, p.Window)
	}
	if p.Lost > uint64(p.Samples/100) {
		t.Errorf("%d samples lost of %d", p.Lost, p.Samples)
	}
	funcs := map[string]bool{}
	for _, f := range p.P.Function {
		funcs[f.Name] = true
	}
	if !funcs["tcp_sendmsg"] && !funcs["tcp_v4_rcv"] && !funcs["tcp_recvmsg"] {
		t.Errorf("no tcp_sendmsg, tcp_v4_rcv or tcp_recvmsg among %d functions", len(funcs))
	}
	const spin = "github.com/cnibench/cnibench/internal/profile.profileTestSpin"
	if !funcs[spin] {
		t.Errorf("%s not found among %d functions", spin, len(funcs))
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parse the written profile: %v", err)
	}
	if len(back.Sample) != len(p.P.Sample) {
		t.Errorf("round trip: %d samples, wrote %d", len(back.Sample), len(p.P.Sample))
	}
	sh := BreakdownFor(back, testComm())
	t.Logf("exclusive %v", sh.Exclusive)
	if sh.Exclusive["tcpip"] == 0 && sh.Exclusive["copy"] == 0 {
		t.Errorf("neither tcpip nor copy in the breakdown: %v", sh.Exclusive)
	}
	if sh.Exclusive[FamilyEngine] == 0 {
		t.Errorf("the test binary's own user-space time (comm %q) is not in engine: %v", testComm(), sh.Exclusive)
	}
	if _, err := s.Stop(); err == nil {
		t.Error("a second Stop succeeded")
	}
}

// testComm is this test binary's comm.
func testComm() string {
	c, err := procFS{root: "/proc"}.comm(uint32(os.Getpid()))
	if err != nil {
		return ""
	}
	return c
}

func TestStartOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"negative frequency", Options{Frequency: -1}, "Options.Frequency"},
		{"huge frequency", Options{Frequency: 1e9}, "Options.Frequency"},
		{"empty CPUs", Options{CPUs: []int{}}, "Options.CPUs"},
		{"offline CPU", Options{CPUs: []int{1 << 20}}, "Options.CPUs"},
		{"twice", Options{CPUs: []int{0, 0}}, "Options.CPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(tt.o)
			if err == nil {
				s.Stop()
				t.Fatal("no error")
			}
			if errors.Is(err, ErrNotSupported) {
				t.Skip(err)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q does not name %s on one line", err, tt.want)
			}
		})
	}
}
