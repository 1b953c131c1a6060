package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/kube/agent"
)

// Watch runs `agent watch` (o: target, allowed, want, interval, probe
// timeout, wait, confirm) in the client pod; once it is ready (the target
// in the other state) it sends the go line and calls change, then returns
// the watch's answer. An answer that did not see the change (no lasting
// new state within the wait, or nothing to measure) is an error, returned
// with what the watch saw; change's error is returned as it is, the watch
// interrupted. Every wait is bounded.
func (a *Access) Watch(ctx context.Context, o agent.WatchOptions, change func(context.Context) error) (agent.Watch, error) {
	want, target := o.Want, o.Target
	args := []string{"watch", "--target", target, "--want", want,
		"--interval", o.Interval.String(), "--timeout", o.ProbeTimeout.String(),
		"--wait", o.Wait.String(), "--confirm", o.Confirm.String()}
	if o.Allowed != "" {
		args = append(args, "--allowed", o.Allowed)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var stdout bytes.Buffer
	stderr := newReadyWriter()
	done := make(chan error, 1)
	go func() {
		err := a.Agent(wctx, a.Client, args, stdinR, &stdout, stderr)
		_ = stdinR.Close() // a go line nobody reads does not block
		done <- err
	}()
	answer := func(err error) (agent.Watch, error) {
		var w agent.Watch
		if jerr := json.Unmarshal(stdout.Bytes(), &w); jerr != nil || w.Schema != agent.SchemaWatch {
			msg := "no answer"
			if err != nil {
				msg = err.Error()
			}
			if s := stderr.other(); s != "" {
				msg += ": " + s
			}
			return w, fmt.Errorf("agent watch at %s: %s", a.Client, msg)
		}
		return w, nil
	}
	readyBound := o.Wait + 30*time.Second
	select {
	case <-stderr.ready:
	case err := <-done:
		w, aerr := answer(err)
		if aerr != nil {
			return w, aerr
		}
		return w, fmt.Errorf("watch of %s ended before it was ready: %s", target, watchError(w))
	case <-time.After(readyBound):
		return agent.Watch{}, fmt.Errorf("watch of %s not ready within %s (%s is never %s?)", target, readyBound, target, other(want))
	case <-ctx.Done():
		return agent.Watch{}, fmt.Errorf("watch of %s: %w", target, ctx.Err())
	}
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(stdinW, "go\n")
		sent <- err
	}()
	select {
	case err := <-sent:
		if err != nil {
			return agent.Watch{}, fmt.Errorf("watch of %s: send the go line: %w", target, err)
		}
	case <-time.After(30 * time.Second):
		return agent.Watch{}, fmt.Errorf("watch of %s: the go line was not taken within 30s", target)
	}
	if err := change(ctx); err != nil {
		return agent.Watch{}, err
	}
	_ = stdinW.Close()
	var err error
	select {
	case err = <-done:
	case <-time.After(readyBound + o.Wait):
		return agent.Watch{}, fmt.Errorf("watch of %s: no answer within %s", target, readyBound+o.Wait)
	}
	w, aerr := answer(err)
	if aerr != nil {
		return w, aerr
	}
	if w.Error != "" || !w.Before || !w.Changed {
		return w, fmt.Errorf("%s %s: %s", target, wantWords(want), watchError(w))
	}
	return w, nil
}

// watchError says why watch w did not measure.
func watchError(w agent.Watch) string {
	var b strings.Builder
	switch {
	case w.Error != "":
		b.WriteString(w.Error)
	case !w.Changed:
		fmt.Fprintf(&b, "not for good within the wait (%d of %d probes answered, the last in the old state at %.3f s)", w.Answered, w.Probes, w.LastOtherSeconds)
	default:
		b.WriteString("no change seen")
	}
	if len(w.Errors) > 0 {
		b.WriteString("; probe errors: " + strings.Join(w.Errors, "; "))
	}
	return b.String()
}

func wantWords(want string) string {
	if want == agent.WantAnswers {
		return "did not answer"
	}
	return "did not stop answering"
}

func other(want string) string {
	if want == agent.WantAnswers {
		return agent.WantRefused
	}
	return agent.WantAnswers
}

// readyWriter is the watch's stderr: ready is closed at its first
// "ready" line; other lines are kept (the first 4 KiB) for errors.
type readyWriter struct {
	ready chan struct{}
	mu    sync.Mutex
	line  []byte
	seen  bool
	rest  strings.Builder
}

func newReadyWriter() *readyWriter { return &readyWriter{ready: make(chan struct{})} }

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range b {
		if c != '\n' {
			w.line = append(w.line, c)
			continue
		}
		switch line := strings.TrimSpace(string(w.line)); {
		case line == "ready" && !w.seen:
			w.seen = true
			close(w.ready)
		case line != "" && w.rest.Len() < 4096:
			if w.rest.Len() > 0 {
				w.rest.WriteString("; ")
			}
			w.rest.WriteString(line)
		}
		w.line = w.line[:0]
	}
	return len(b), nil
}

// other returns what stderr held besides "ready".
func (w *readyWriter) other() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.rest.String()
	if l := strings.TrimSpace(string(w.line)); l != "" {
		s = strings.TrimPrefix(s+"; "+l, "; ")
	}
	return s
}
