package runcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/server"
	"github.com/cnibench/cnibench/pkg/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixedResult is a deterministic tcp_rr result with one noisy metric, a
// failed repeat and a warning.
func fixedResult() *result.Result {
	r := &result.Result{
		Schema: result.SchemaResult,
		Tool:   result.Tool{Name: "cnibench", Version: "0.1.0"},
		Start:  time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		Host:   result.Host{Hostname: "lab", Kernel: "6.18.0", CPUModel: "Test CPU", Cores: 2},
		Config: map[string]string{"test": "tcp_rr", "target": "198.18.0.2:12870", "flows": "1",
			"duration": "10s", "warmup": "1s", "path_mtu": "1500"},
		Warnings: []string{"3 transaction(s) failed in repeat 2; first error: tcp_rr read response: connection reset by peer"},
	}
	for i, v := range []float64{41000, 43500, 42000, 39000, 61000} {
		r.Repeats = append(r.Repeats, result.Repeat{Index: i, Metrics: map[string]float64{
			result.TransPerSec: v, result.LatencyUsP50: 1e6 / v * 0.9, result.LatencyUsP99: 1e6 / v * 2.5,
			result.CPUUsPerTrans: 38 + float64(i), result.HostCPUPct: 160, result.Errors: 0,
		}})
	}
	r.Repeats = append(r.Repeats, result.Repeat{Index: 5, Error: "no traffic completed in the measured window"})
	r.Summarize()
	return r
}

func TestPrintTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := PrintText(&b, fixedResult()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tcp_rr.text.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		_ = os.WriteFile(path+".got", b.Bytes(), 0o644)
		t.Fatalf("text output differs from %s; see %s.got", path, path)
	}
}

// startServer serves cnibench on a loopback port for the test's lifetime.
func startServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.NewServer(nil).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10s")
		}
	})
	return ln.Addr().String()
}

// With --stop-on-stdin-eof, the end of standard input interrupts the run,
// which prints what it measured (interrupted) and exits as on Ctrl-C.
func TestStopOnStdinEOF(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	addr := startServer(t)
	tests := []struct {
		name        string
		stop        bool
		wantRepeats int // at least
		interrupted bool
	}{
		{"interrupted by EOF", true, 1, true},
		{"flag off: EOF ignored", false, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdin, w := io.Pipe()
			var out bytes.Buffer
			// Stdin closes as the second repeat starts.
			errOut := &closeAt{marker: "repeat 2/3", c: w}
			cmd := NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: stdin, Out: &out, ErrOut: errOut})
			args := []string{"--target", addr, "--test", engine.TCPRR, "--duration", "300ms", "--warmup", "0s", "--repeat", "3", "--format", "json"}
			if tt.stop {
				args = append(args, "--"+StopOnStdinEOFFlag)
			}
			cmd.SetArgs(args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(context.Background())
			var res result.Result
			if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
				t.Fatalf("output is not a result: %v (err %v, stderr %s)", jerr, err, errOut.b.String())
			}
			if res.Interrupted != tt.interrupted || len(res.Repeats) < tt.wantRepeats {
				t.Errorf("interrupted %v with %d repeats, want %v with at least %d", res.Interrupted, len(res.Repeats), tt.interrupted, tt.wantRepeats)
			}
			if tt.interrupted {
				if !errors.Is(err, clierr.ErrInterrupted) {
					t.Errorf("err = %v, want interrupted", err)
				}
				if len(res.Repeats) > 2 {
					t.Errorf("not stopped early: %d repeats", len(res.Repeats))
				}
			} else if err != nil {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestStopOnStdinEOFWithoutStdin(t *testing.T) {
	cmd := NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{Out: io.Discard, ErrOut: io.Discard})
	cmd.SetArgs([]string{"--target", "127.0.0.1:1", "--" + StopOnStdinEOFFlag})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--stop-on-stdin-eof: no standard input") {
		t.Errorf("err = %v", err)
	}
}

// closeAt is a progress writer that closes c at the first write holding
// marker.
type closeAt struct {
	marker string
	c      io.Closer
	b      bytes.Buffer
}

func (w *closeAt) Write(p []byte) (int, error) {
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.marker) {
		w.c.Close()
	}
	return len(p), nil
}
