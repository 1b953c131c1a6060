package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli"
	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/server"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestMain lets the test binary run as the cnibench command itself, so the
// tests can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("CNIBENCH_TEST_AS_MAIN") == "1" {
		os.Args = append([]string{"cnibench"}, strings.Fields(os.Getenv("CNIBENCH_TEST_ARGS"))...)
		Main()
	}
	os.Exit(m.Run())
}

func run(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	err = Run(context.Background(), logger, cli.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e}, args)
	return o.String(), e.String(), err
}

func TestBadInputIsOneLineAndExit2(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "127.0.0.1", "--flows", "0"}, "--flows 0: must be at least 1"},
		{[]string{"run", "--target", "127.0.0.1", "--flows", "300"}, "--flows 300: must be between 1 and 256"},
		{[]string{"run", "--target", "127.0.0.1", "--test", "tcp_maerts"}, `--test "tcp_maerts": must be one of`},
		{[]string{"run", "--test", "tcp_rr"}, "--target"},
		{[]string{"run", "--target", "127.0.0.1", "--duration", "soon"}, `invalid argument "soon" for "--duration"`},
		{[]string{"run", "--target", "127.0.0.1", "--rate", "fast"}, "--rate"},
		{[]string{"run", "--target", "127.0.0.1", "--message-size", "-3"}, "--message-size"},
		{[]string{"run", "--target", "127.0.0.1", "--format", "xml"}, "--format xml: must be text or json"},
		{[]string{"run", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"serve", "--listen", "256.1.1.1:1"}, "--listen"},
		{[]string{"suite", "--profile", "huge"}, "--profile huge"},
		{[]string{"suite", "--flows", "1,x"}, "--flows"},
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand" for "cnibench" (see 'cnibench --help')`},
		{[]string{"runn"}, `unknown command "runn" for "cnibench"; did you mean "run"?`},
		{[]string{"lab", "up", "--datapath"}, `unknown flag: --datapath (see 'cnibench lab up --help')`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, errOut, err := run(c.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if code := clierr.ExitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2 (err %v)", code, err)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(lines) != 1 || !strings.Contains(errOut, c.want) {
				t.Errorf("stderr %q: want one line containing %q", errOut, c.want)
			}
			if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
				t.Errorf("stack trace on stderr: %q", errOut)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, _, err := run("version")
	if err != nil || !strings.HasPrefix(out, "cnibench ") {
		t.Fatalf("version: %q %v", out, err)
	}
}

func startServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = server.NewServer(nil).Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// The acceptance check: every test prints one valid
// cnibench/result/v1 document whose trans_per_sec median is > 0.
func TestRunJSONEveryTest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	addr := startServer(t)
	for _, test := range engine.Tests {
		t.Run(test, func(t *testing.T) {
			if test == engine.ICMPEcho && !hostAllowsPing() {
				t.Skip("the host's net.ipv4.ping_group_range excludes this process's group (not changed by tests); icmp_echo runs in a namespace of its own in internal/engine")
			}
			out, errOut, err := run("run", "--target", addr, "--test", test, "--duration", "300ms", "--warmup", "100ms", "--repeat", "1", "--format", "json", "-q")
			if err != nil {
				t.Fatalf("%v: %s", err, errOut)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			var res result.Result
			if err := dec.Decode(&res); err != nil {
				t.Fatalf("stdout is not JSON: %v", err)
			}
			if dec.More() {
				t.Fatal("more than one document on stdout")
			}
			if res.Schema != result.SchemaResult || res.Summary[result.TransPerSec].Median <= 0 {
				t.Fatalf("schema %q, trans_per_sec %+v", res.Schema, res.Summary[result.TransPerSec])
			}
			if res.Tool.Version == "" || res.Host.Kernel == "" || res.Host.Cores == 0 || res.Config["test"] != test {
				t.Fatalf("missing facts: tool %+v host %+v", res.Tool, res.Host)
			}
		})
	}
}

func TestRunTextTable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	addr := startServer(t)
	out, _, err := run("run", "--target", addr, "--test", "tcp_rr", "--duration", "200ms", "--warmup", "0", "--repeat", "2", "-q")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tcp_rr to " + addr, "trans_per_sec", "latency_us_p99", "cpu_us_per_trans", "95% CI"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// Ctrl-C during a run stops it cleanly, prints what was measured and exits 130.
func TestInterruptExit130(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	addr := startServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CNIBENCH_TEST_AS_MAIN=1",
		"CNIBENCH_TEST_ARGS=run --target "+addr+" --test tcp_rr --duration 400ms --warmup 0 --repeat 50 --format json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Let two repeats finish.
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(stderr.String(), "trans/s") < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130; stderr:\n%s", err, stderr.String())
	}
	var res result.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("no result on stdout after Ctrl-C: %v\n%s", err, stdout.String())
	}
	if !res.Interrupted || len(res.Repeats) < 2 || res.Summary[result.TransPerSec].Median <= 0 {
		t.Fatalf("interrupted %v, %d repeats", res.Interrupted, len(res.Repeats))
	}
	if !strings.Contains(stderr.String(), "interrupted") || strings.Contains(stderr.String(), "goroutine") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

// A backquoted word in a flag's usage becomes its value name in --help:
// --http-keepalive is a bool and must show none.
func TestRunHelpKeepaliveHasNoValueName(t *testing.T) {
	out, _, err := run("run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "--http-keepalive" {
			if f[1] != "reuse" {
				t.Fatalf("run --help: %q: want the description right after the flag", l)
			}
			return
		}
	}
	t.Fatalf("run --help shows no --http-keepalive:\n%s", out)
}

func TestUnknownCommandOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"unknown command \"runn\" for \"cnibench\"\n\nDid you mean this?\n\trun\n":          `unknown command "runn" for "cnibench"; did you mean "run"?`,
		"unknown command \"su\" for \"cnibench\"\n\nDid you mean this?\n\tsuite\n\tserve\n": `unknown command "su" for "cnibench"; did you mean "suite" or "serve"?`,
		"unknown command \"x\" for \"cnibench\"":                                            `unknown command "x" for "cnibench" (see 'cnibench --help')`,
	} {
		if got := unknownCommand(in); got != want {
			t.Errorf("unknownCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

// hostAllowsPing reports whether this process may open an ICMP datagram
// socket in the host's namespace (net.ipv4.ping_group_range includes its
// group).
func hostAllowsPing() bool {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ping_group_range")
	if err != nil {
		return false
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		return false
	}
	g := os.Getgid()
	return lo <= g && g <= hi
}

// Ctrl-C ends a command that only reads and computes at once, however
// long its input takes: here report waits on a pipe that never ends.
func TestInterruptReportAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CNIBENCH_TEST_AS_MAIN=1", "CNIBENCH_TEST_ARGS=report /dev/stdin")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = pr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if _, err := pw.Write([]byte(`{"schema":`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "interrupted") {
			t.Fatalf("exit %v after %s, stderr %q; want 130", err, time.Since(t0), stderr.String())
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("report still running 5 s after Ctrl-C")
	}
}

// TestInterrupted: a command that finished is never reported interrupted,
// even when the context is cancelled right after (Main's stop()); a
// cancel before the end is an interruption.
func TestInterrupted(t *testing.T) {
	for i := 0; i < 2000; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		finished := make(chan struct{})
		got := make(chan bool, 1)
		go func() { got <- interrupted(ctx, finished) }()
		close(finished)
		cancel()
		if <-got {
			t.Fatalf("round %d: a finished command reported interrupted", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if !interrupted(ctx, make(chan struct{})) {
		t.Error("a cancel before the end: not reported interrupted")
	}
}
