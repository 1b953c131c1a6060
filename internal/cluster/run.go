package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
)

// stopOnStdinEOF is `cnibench run`'s hidden flag (run.StopOnStdinEOFFlag)
// with which the end of the exec's stdin interrupts the client.
const stopOnStdinEOF = "--stop-on-stdin-eof"

// Bounds of the client runs (variables: tests shorten them).
var (
	// clientGrace is how long an interrupted client has, once its stdin
	// is closed, to report what it measured before its stream is cut.
	clientGrace = 10 * time.Second
	// clientMarginMin and clientMarginMax bound the margin a client run's
	// deadline adds to its measured time (clientDeadline).
	clientMarginMin = time.Minute
	clientMarginMax = 10 * time.Minute
	// otherTimeout bounds a command of Run that is not `run`.
	otherTimeout = 10 * time.Minute
)

// `cnibench run`'s defaults, for a client run's deadline when its
// arguments leave them out.
const (
	defaultDuration = 10 * time.Second
	defaultWarmup   = time.Second
)

// clientDeadline is how long a `cnibench run ARGS` client may take: its
// measured time, --repeat × (--warmup + --duration) (the flags' defaults
// where absent or unreadable: the client itself refuses bad values at
// once), plus a margin of half that for the handshakes, the server's
// set-up and the result, at least clientMarginMin (1 min) and at most
// clientMarginMax (10 min).
func clientDeadline(args []string) time.Duration {
	dur, warm, rep := defaultDuration, defaultWarmup, engine.DefaultRepeat
	for i := 0; i < len(args); i++ {
		name, val, ok := strings.Cut(args[i], "=")
		if !ok && i+1 < len(args) {
			val = args[i+1]
		}
		switch name {
		case "--duration":
			if d, err := time.ParseDuration(val); err == nil && d >= 0 {
				dur = d
			}
		case "--warmup":
			if d, err := time.ParseDuration(val); err == nil && d >= 0 {
				warm = d
			}
		case "--repeat":
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				rep = n
			}
		}
	}
	measured := time.Duration(rep) * (dur + warm)
	return measured + min(max(measured/2, clientMarginMin), clientMarginMax)
}

// kctx is ctx with the run's logger for the kube package's functions.
func (d *Deployment) kctx(ctx context.Context) context.Context {
	return kube.WithLogger(ctx, d.log)
}

// Run implements backend.Deployment: `cnibench ARGS` by exec in the
// place's pod (the pod's environment carries the run's token).
//
// A client (`cnibench run`) runs with --stop-on-stdin-eof and its stdin
// attached, within clientDeadline(ARGS). When ctx ends (Ctrl-C), its stdin
// is closed, which stops it as Ctrl-C would stop it locally: its stream is
// kept open for clientGrace (10 s) more to read the result it then prints
// (Interrupted, with the repeats measured). Any other command runs within
// otherTimeout. A run that outlives its deadline, or whose stream drops,
// returns a one-line error with what output there was.
//
// At a pairsPlace (--pairs N), the clients of every pair run at once, each
// as above (runPairs).
func (d *Deployment) Run(ctx context.Context, pl backend.Place, args []string) ([]byte, []byte, error) {
	switch p := pl.(type) {
	case place:
		return d.runAt(ctx, p, args)
	case pairsPlace:
		return runPairs(ctx, p, args, d.runAt)
	case localPlace:
		return d.runLocal(ctx, args)
	}
	return nil, nil, fmt.Errorf("kubernetes: cannot run at %v", pl)
}

// runAt is Run at one pod.
func (d *Deployment) runAt(ctx context.Context, p place, args []string) ([]byte, []byte, error) {
	if len(args) == 0 || args[0] != "run" {
		cctx, cancel := context.WithTimeout(ctx, otherTimeout)
		defer cancel()
		return d.exec(cctx, p.pod, append([]string{"/cnibench"}, args...), nil)
	}
	return d.runClient(ctx, d.b.exec, p.pod, clientCmd(args), clientDeadline(args[1:]))
}

// clientCmd is the command of a client run `cnibench run ARGS…` (args[0]
// is "run"): the image's /cnibench, interrupted through its stdin.
func clientCmd(args []string) []string {
	return append([]string{"/cnibench", "run", stopOnStdinEOF}, args[1:]...)
}

// runClient runs cmd, a client, through ex in pod ("": on this machine,
// ex a localExecer) within limit, closing its stdin when ctx ends (see
// Run).
func (d *Deployment) runClient(ctx context.Context, ex kube.Execer, pod string, cmd []string, limit time.Duration) ([]byte, []byte, error) {
	// The stream has its own context: ctx's end closes the client's
	// stdin, not the stream that brings its result back.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(d.kctx(ctx)), limit)
	defer cancel()
	stdin, closeStdin := io.Pipe()
	defer closeStdin.Close()
	done := make(chan struct{})
	defer close(done)
	var interrupted, cut atomic.Bool
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		interrupted.Store(true)
		d.log.Info("interrupting the client: it reports what it measured", "pod", pod, "grace", clientGrace)
		closeStdin.Close()
		t := time.NewTimer(clientGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			cut.Store(true)
			cancel()
		}
	}()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := ex.Exec(sctx, d.ns, pod, kube.ContainerName, cmd, stdin, &stdout, &stderr)
	where, stream := "in pod "+d.ns+"/"+pod, "the exec stream"
	if pod == "" {
		where, stream = "on this machine", "it"
	}
	switch {
	case err == nil:
	case cut.Load():
		err = fmt.Errorf("client %s: interrupted, and no result within %v: %w", where, clientGrace, ctx.Err())
	case !interrupted.Load() && errors.Is(sctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("client %s: no result within %v, its deadline (--repeat × (--warmup + --duration) and a margin): %w",
			where, limit, context.DeadlineExceeded)
	case !interrupted.Load():
		if _, exited := kube.ExitCode(err); !exited {
			err = fmt.Errorf("client %s: %s failed after %v: %s", where, stream, time.Since(start).Round(time.Millisecond), firstLine(err.Error()))
		}
	}
	return stdout.Bytes(), stderr.Bytes(), err
}

// agentJSON runs `cnibench k8s agent ARGS` in a run's pod and decodes its
// JSON output into v.
func (d *Deployment) agentJSON(ctx context.Context, short string, args []string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stdout, stderr, err := d.exec(ctx, d.name(short), append([]string{"/cnibench", "k8s", "agent"}, args...), nil)
	if err != nil {
		return fmt.Errorf("agent %s in %s: %w (%s)", args[0], short, err, firstLine(string(stderr)))
	}
	if err := json.Unmarshal(stdout, v); err != nil {
		return fmt.Errorf("agent %s in %s: decode its output: %w", args[0], short, err)
	}
	return nil
}

// exec runs cmd in pod's container and returns its output; watch, if not
// nil, sees its stderr as it comes. The kube package logs to the run's
// logger.
func (d *Deployment) exec(ctx context.Context, pod string, cmd []string, watch *lineWatcher) ([]byte, []byte, error) {
	var stdout, stderr bytes.Buffer
	var w io.Writer = &stderr
	if watch != nil {
		w = io.MultiWriter(&stderr, watch)
	}
	err := d.b.exec.Exec(d.kctx(ctx), d.ns, pod, kube.ContainerName, cmd, nil, &stdout, w)
	return stdout.Bytes(), stderr.Bytes(), err
}
