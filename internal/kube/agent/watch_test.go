package agent

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

func watchOpts(target, want string) WatchOptions {
	return WatchOptions{Target: target, Want: want, Interval: 2 * time.Millisecond, ProbeTimeout: 200 * time.Millisecond,
		Wait: 5 * time.Second, Confirm: 200 * time.Millisecond}
}

// runWatch runs a watch, sends "go" once it is ready, then calls change
// after delay, and returns the result.
func runWatch(t *testing.T, opts WatchOptions, delay time.Duration, change func()) Watch {
	t.Helper()
	goR, goW := io.Pipe()
	readyR, readyW := io.Pipe()
	done := make(chan Watch, 1)
	go func() { done <- RunWatch(context.Background(), opts, goR, readyW); readyW.Close() }()
	line, err := bufio.NewReader(readyR).ReadString('\n')
	if err != nil || line != "ready\n" {
		w := <-done
		t.Fatalf("ready line %q (%v); watch %+v", line, err, w)
	}
	go io.Copy(io.Discard, readyR)
	_, _ = goW.Write([]byte("go\n"))
	time.Sleep(delay)
	change()
	return <-done
}

// A listener that closes is seen refused about when it closed, while the
// allowed target keeps answering.
func TestWatchRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	for _, l := range []net.Listener{ln, allowed} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	opts := watchOpts(ln.Addr().String(), WantRefused)
	opts.Allowed = allowed.Addr().String()
	w := runWatch(t, opts, 100*time.Millisecond, func() { ln.Close() })
	if !w.Before || !w.Changed || w.Error != "" {
		t.Fatalf("watch %+v", w)
	}
	if w.AfterSeconds < 0.09 || w.AfterSeconds > 0.5 {
		t.Errorf("after %.3fs, want about 0.1s", w.AfterSeconds)
	}
	if w.FirstConnectSeconds != 0 {
		t.Errorf("first connect %.6fs when watching for refusal, want 0", w.FirstConnectSeconds)
	}
	if w.AllowedProbes == 0 || w.AllowedAnswered != w.AllowedProbes || !w.AllowedEndAnswered {
		t.Errorf("allowed %d of %d answered, the last %v", w.AllowedAnswered, w.AllowedProbes, w.AllowedEndAnswered)
	}
	if w.Answered == 0 || w.Probes <= w.Answered {
		t.Errorf("probes %d answered %d", w.Probes, w.Answered)
	}
}

// serving listens on a loopback port and accepts (and closes) every
// connection until the listener is closed (at the latest when t ends).
func serving(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptAndClose(l)
	return l
}

func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// An allowed target cut for a while before the change (a CNI dropping
// allowed traffic while it installs a policy): its misses are counted and
// the last one is dated before the change, so that a caller can tell a
// passing cut from a lasting one.
func TestWatchAllowedPassingCut(t *testing.T) {
	ln, allowed := serving(t), serving(t)
	addr := allowed.Addr().String()
	var again net.Listener
	defer func() {
		if again != nil {
			again.Close()
		}
	}()
	opts := watchOpts(ln.Addr().String(), WantRefused)
	opts.Allowed = addr
	w := runWatch(t, opts, 50*time.Millisecond, func() {
		allowed.Close() // cut at 50 ms, back at 150 ms, the target refused from 300 ms
		time.Sleep(100 * time.Millisecond)
		var err error
		if again, err = net.Listen("tcp", addr); err != nil {
			t.Error(err)
			return
		}
		go acceptAndClose(again)
		time.Sleep(150 * time.Millisecond)
		ln.Close()
	})
	if !w.Changed || w.Error != "" {
		t.Fatalf("watch %+v", w)
	}
	if w.AllowedAnswered >= w.AllowedProbes || w.AllowedAnswered == 0 {
		t.Errorf("allowed %d of %d answered, want some missed and some answered", w.AllowedAnswered, w.AllowedProbes)
	}
	if !w.AllowedEndAnswered {
		t.Error("the allowed target's last probe: not answered, want answered (it was back)")
	}
	if w.AllowedLastMissSeconds < 0.04 || w.AllowedLastMissSeconds >= w.AfterSeconds {
		t.Errorf("last allowed miss at %.3fs, want after the cut's start (0.05s) and before the change (%.3fs)", w.AllowedLastMissSeconds, w.AfterSeconds)
	}
}

// The allowed target cut with the change and back only after the change
// is confirmed: the watch probes it on until it answers (the cut passed),
// and, if it never does, until the wait ends (the cut may last).
func TestWatchAllowedCutPastTheChange(t *testing.T) {
	for _, tt := range []struct {
		name string
		back bool
	}{{"back", true}, {"never back", false}} {
		t.Run(tt.name, func(t *testing.T) {
			ln, allowed := serving(t), serving(t)
			addr := allowed.Addr().String()
			opts := watchOpts(ln.Addr().String(), WantRefused)
			opts.Allowed, opts.Wait = addr, 2*time.Second
			back := make(chan net.Listener, 1)
			t0 := time.Now()
			w := runWatch(t, opts, 50*time.Millisecond, func() {
				ln.Close()
				allowed.Close()
				if !tt.back {
					return
				}
				go func() { // back 300 ms after the confirmation (200 ms)
					time.Sleep(500 * time.Millisecond)
					l, err := net.Listen("tcp", addr)
					if err != nil {
						t.Error(err)
						back <- nil
						return
					}
					go acceptAndClose(l)
					back <- l
				}()
			})
			if tt.back {
				if l := <-back; l != nil {
					defer l.Close()
				}
			}
			if !w.Changed || w.Error != "" {
				t.Fatalf("watch %+v", w)
			}
			if w.AllowedEndAnswered != tt.back || w.AllowedAnswered >= w.AllowedProbes {
				t.Errorf("allowed %d of %d answered, the last %v, want some missed and the last %v", w.AllowedAnswered, w.AllowedProbes, w.AllowedEndAnswered, tt.back)
			}
			if tt.back && w.AllowedLastMissSeconds <= w.AfterSeconds+opts.Confirm.Seconds() {
				t.Errorf("last allowed miss at %.3fs, want after the change's confirmation (%.3fs + %s)", w.AllowedLastMissSeconds, w.AfterSeconds, opts.Confirm)
			}
			if d := time.Since(t0); !tt.back && d > opts.Wait+2*time.Second {
				t.Errorf("took %s: the allowed target's wait is bounded by %s", d, opts.Wait)
			}
		})
	}
}

// A port that starts listening is seen answering; a target already in the
// awaited state is refused as a measurement.
func TestWatchAnswersAndAlready(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var ln2 net.Listener
	w := runWatch(t, watchOpts(addr, WantAnswers), 50*time.Millisecond, func() {
		if ln2, err = net.Listen("tcp", addr); err != nil {
			t.Error(err)
		}
	})
	if ln2 != nil {
		defer ln2.Close()
	}
	if !w.Changed || w.AfterSeconds < 0.04 || w.AfterSeconds > 0.5 {
		t.Errorf("watch %+v", w)
	}
	// The first answering probe's connect took some time, less than a
	// probe's bound.
	if w.FirstConnectSeconds <= 0 || w.FirstConnectSeconds >= 0.2 {
		t.Errorf("first connect %.6fs, want in (0, 0.2)", w.FirstConnectSeconds)
	}
	opts := watchOpts(addr, WantAnswers)
	opts.Wait = 100 * time.Millisecond
	w = RunWatch(context.Background(), opts, nil, io.Discard)
	if w.Before || w.Error == "" {
		t.Errorf("already answering: %+v", w)
	}
}
