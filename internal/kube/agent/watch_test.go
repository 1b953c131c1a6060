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
	if w.AllowedProbes == 0 || w.AllowedAnswered != w.AllowedProbes {
		t.Errorf("allowed %d of %d answered", w.AllowedAnswered, w.AllowedProbes)
	}
	if w.Answered == 0 || w.Probes <= w.Answered {
		t.Errorf("probes %d answered %d", w.Probes, w.Answered)
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
	opts := watchOpts(addr, WantAnswers)
	opts.Wait = 100 * time.Millisecond
	w = RunWatch(context.Background(), opts, nil, io.Discard)
	if w.Before || w.Error == "" {
		t.Errorf("already answering: %+v", w)
	}
}
