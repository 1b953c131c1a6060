package cluster

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/kube"
)

// TestLocalExecer: a command for the image's /cnibench runs as this
// machine's executable, with the run's token in its environment, its
// stdin and output attached; a non-zero exit is an exit code kube.ExitCode
// reads, as from a pod.
func TestLocalExecer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ex := localExecer{self: "/bin/sh", token: "tok-1"}
	tests := []struct {
		name, script, stdin, stdout string
		code                        int
	}{
		{"token and stdin", `read x; echo "$CNIBENCH_TOKEN $x"`, "in\n", "tok-1 in\n", 0},
		{"exit code", `echo out; exit 3`, "", "out\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := ex.Exec(ctx, "ns", "pod", kube.ContainerName, []string{"/cnibench", "-c", tt.script}, strings.NewReader(tt.stdin), &stdout, &stderr)
			code, exited := kube.ExitCode(err)
			if tt.code == 0 && err != nil || tt.code != 0 && (!exited || code != tt.code) {
				t.Errorf("err %v (exit %d, exited %v), want exit %d", err, code, exited, tt.code)
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q (stderr %q)", stdout.String(), tt.stdout, stderr.String())
			}
		})
	}
	if err := ex.Exec(ctx, "", "", "", nil, nil, nil, nil); err == nil {
		t.Error("no command: no error")
	}
}

// TestRunClientLocal: a client on this machine is interrupted as one in a
// pod: when the run's context ends its stdin is closed, and what it then
// prints is its result; a client that outlives its deadline is cut with a
// one-line error saying where it ran.
func TestRunClientLocal(t *testing.T) {
	d := &Deployment{ns: "x", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ex := localExecer{self: "/bin/sh"}

	// a client that ends by itself returns at once, its stdin still open
	start := time.Now()
	out, _, err := d.runClient(context.Background(), ex, "", []string{"/cnibench", "-c", "echo done"}, 10*time.Second)
	if err != nil || string(out) != "done\n" || time.Since(start) > 3*time.Second {
		t.Errorf("own end: out %q, err %v, after %v", out, err, time.Since(start))
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	out, _, err = d.runClient(ctx, ex, "", []string{"/cnibench", "-c", "cat >/dev/null; echo interrupted"}, 10*time.Second)
	if err != nil || string(out) != "interrupted\n" {
		t.Errorf("interrupted: out %q, err %v", out, err)
	}

	_, _, err = d.runClient(context.Background(), ex, "", []string{"/cnibench", "-c", "exec sleep 5"}, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "client on this machine: no result within 200ms") {
		t.Errorf("deadline: err %v", err)
	}
}
