package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// SchemaWatch is the schema of `agent watch`'s result.
const SchemaWatch = "cnibench/agent/watch/v1"

// Watched states (WatchOptions.Want).
const (
	WantRefused = "refused" // the target stops answering (a deny is enforced)
	WantAnswers = "answers" // the target answers (a deny is lifted, a service is programmed)
)

// WatchOptions configure a watch.
type WatchOptions struct {
	// Target is the HOST:PORT watched; Allowed, if not empty, one that
	// must keep answering meanwhile (a deny must not cut everything).
	Target, Allowed string
	// Want is the state awaited: WantRefused or WantAnswers.
	Want string
	// Interval between probe starts (the resolution of the time found),
	// ProbeTimeout each probe's bound (a probe that gets no answer in it
	// counts as not answered), Wait the bound from "go" until the state is
	// reached, Confirm how long every probe must stay in the new state for
	// the change to count (no flapping back).
	Interval, ProbeTimeout, Wait, Confirm time.Duration
}

// Watch is the outcome of a watch: when, after "go", the target reached the
// awaited state for good.
type Watch struct {
	Schema  string `json:"schema"`
	Target  string `json:"target"`
	Allowed string `json:"allowed,omitempty"`
	Want    string `json:"want"`
	// Before is true when, before "go", the target was in the other state
	// (otherwise the watch measures nothing and says so in Error).
	Before bool `json:"before"`
	// Changed is true when the target reached Want within Wait and stayed
	// there for Confirm.
	Changed bool `json:"changed"`
	// AfterSeconds is the time from "go" to the start of the first probe
	// of the lasting new state; ResolutionSeconds the probe interval;
	// LastOtherSeconds the start of the last probe still in the old state.
	AfterSeconds      float64 `json:"after_seconds"`
	ResolutionSeconds float64 `json:"resolution_seconds"`
	LastOtherSeconds  float64 `json:"last_other_seconds"`
	// FirstConnectSeconds (Want WantAnswers): how long the first probe of
	// the lasting answer took to connect, from its connect call until the
	// handshake completed — the first connection through the newly
	// programmed path (0 when the target did not change, or for
	// WantRefused).
	FirstConnectSeconds float64 `json:"first_connect_seconds,omitempty"`
	// Probes were made after "go", Answered of them answered.
	Probes   int `json:"probes"`
	Answered int `json:"answered"`
	// AllowedProbes to Allowed, AllowedAnswered of them answered;
	// AllowedLastMissSeconds is the start of the last one unanswered
	// (after "go"; 0 if every one answered), AllowedEndAnswered whether
	// the last one to complete answered: misses followed by answers are a
	// passing cut while the change went in. Allowed is probed on after the
	// target's change until it answers or Wait ends, so false means it did
	// not answer again within Wait.
	AllowedProbes          int     `json:"allowed_probes"`
	AllowedAnswered        int     `json:"allowed_answered"`
	AllowedLastMissSeconds float64 `json:"allowed_last_miss_seconds,omitempty"`
	AllowedEndAnswered     bool    `json:"allowed_end_answered,omitempty"`
	// Errors are the first distinct probe errors.
	Errors []string `json:"errors"`
	// Error says why the watch could not measure ("" if it could).
	Error string `json:"error,omitempty"`
}

type probeResult struct {
	start time.Duration // since "go"
	took  time.Duration // the connect call's duration
	ok    bool
	done  bool
}

// RunWatch probes opts.Target until it is in the state opposite to
// opts.Want, writes "ready" to ready, waits for a line on golines (the
// caller's signal that it is about to change the cluster), then probes
// every Interval until the target has been in Want for Confirm, or Wait
// ends. Successful probes are TCP connections closed with a reset (no
// TIME_WAIT left behind at thousands a second).
func RunWatch(ctx context.Context, opts WatchOptions, golines io.Reader, ready io.Writer) Watch {
	w := Watch{Schema: SchemaWatch, Target: opts.Target, Allowed: opts.Allowed, Want: opts.Want,
		ResolutionSeconds: opts.Interval.Seconds(), Errors: []string{}}
	var emu sync.Mutex
	addErr := func(err error) {
		emu.Lock()
		defer emu.Unlock()
		if msg := err.Error(); !slices.Contains(w.Errors, msg) && len(w.Errors) < MaxConnectErrors {
			w.Errors = append(w.Errors, msg)
		}
	}
	probe := func(ctx context.Context, target string) bool {
		d := net.Dialer{Timeout: opts.ProbeTimeout}
		c, err := d.DialContext(ctx, "tcp", target)
		if err != nil {
			if ctx.Err() == nil {
				addErr(err)
			}
			return false
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
		return true
	}
	wantOK := opts.Want == WantAnswers
	// Before: the target in the other state (bounded).
	deadline := time.Now().Add(opts.Wait)
	for {
		if probe(ctx, opts.Target) != wantOK {
			w.Before = true
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			w.Error = fmt.Sprintf("%s was already %s before the change: nothing to measure", opts.Target, opts.Want)
			return w
		}
		time.Sleep(opts.Interval)
	}
	fmt.Fprintln(ready, "ready")
	goCh := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(golines).ReadString('\n')
		goCh <- err
	}()
	select {
	case err := <-goCh:
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			w.Error = "reading the go signal: " + err.Error()
			return w
		}
	case <-ctx.Done():
		w.Error = "interrupted before the go signal"
		return w
	case <-time.After(opts.Wait):
		w.Error = "no go signal within " + opts.Wait.String()
		return w
	}
	t0 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, opts.Wait+opts.ProbeTimeout)
	defer cancel()
	var mu sync.Mutex
	var results []*probeResult
	var wg sync.WaitGroup
	allowedDone := make(chan struct{})
	if opts.Allowed != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(max(opts.Interval, 10*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-allowedDone:
					return
				case <-wctx.Done():
					return
				case <-t.C:
				}
				start := time.Since(t0)
				ok := probe(wctx, opts.Allowed)
				if wctx.Err() != nil {
					return
				}
				mu.Lock()
				w.AllowedProbes++
				w.AllowedEndAnswered = ok
				if ok {
					w.AllowedAnswered++
				} else {
					w.AllowedLastMissSeconds = start.Seconds() // probes run in turn: the latest
				}
				mu.Unlock()
			}
		}()
	}
	// decided reports whether the target has been in the new state for
	// Confirm: every probe started after the last one in the old state
	// that has completed is in the new state, and they span Confirm.
	decided := func() (bool, *probeResult, time.Duration) {
		var lastOther time.Duration = -1
		var first *probeResult
		frontier := time.Duration(-1)
		for _, r := range results {
			if !r.done {
				break // the contiguous completed prefix only
			}
			frontier = r.start
			if r.ok != wantOK {
				lastOther, first = r.start, nil
			} else if first == nil {
				first = r
			}
		}
		return first != nil && frontier-first.start >= opts.Confirm, first, lastOther
	}
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	for {
		mu.Lock()
		ok, first, lastOther := decided()
		mu.Unlock()
		if ok {
			w.Changed, w.AfterSeconds = true, first.start.Seconds()
			if wantOK {
				w.FirstConnectSeconds = first.took.Seconds()
			}
			w.LastOtherSeconds = max(lastOther, 0).Seconds()
			break
		}
		if time.Since(t0) > opts.Wait || wctx.Err() != nil {
			w.LastOtherSeconds = max(lastOther, 0).Seconds()
			break
		}
		<-tick.C
		r := &probeResult{start: time.Since(t0)}
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			ok := probe(wctx, opts.Target)
			took := time.Since(t)
			if wctx.Err() != nil {
				return // cut short: it says nothing
			}
			mu.Lock()
			r.ok, r.done, r.took = ok, true, took
			mu.Unlock()
		}()
	}
	// The allowed target unanswered at the end: it is probed on until it
	// answers again (a passing cut) or the wait ends (it may be cut for
	// good).
	for opts.Allowed != "" && wctx.Err() == nil && time.Since(t0) <= opts.Wait {
		mu.Lock()
		cut := w.AllowedProbes > 0 && !w.AllowedEndAnswered
		mu.Unlock()
		if !cut {
			break
		}
		<-tick.C
	}
	close(allowedDone)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, r := range results {
		if r.done {
			w.Probes++
			if r.ok {
				w.Answered++
			}
		}
	}
	return w
}
