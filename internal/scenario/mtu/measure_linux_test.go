package mtu

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

type place string

func (p place) String() string { return string(p) }

// Measure bounds the client, turns a stopped or failed client into a
// failed "stalled" repeat and adds the detected path MTU to measured ones.
func TestMeasure(t *testing.T) {
	measured := func(context.Context) (*result.Result, error) {
		return &result.Result{Schema: result.SchemaResult, Config: map[string]string{"path_mtu": "9000"},
			Repeats: []result.Repeat{{Metrics: map[string]float64{result.ThroughputBitsPerSec: 1e9}}}}, nil
	}
	tests := []struct {
		name       string
		run        func(ctx context.Context) (*result.Result, error)
		cancelled  bool
		wantErr    string // the repeat's error ("" for none)
		wantMetric float64
		fails      bool // Measure itself returns an error
	}{
		{"measured", measured, false, "", 50, false},
		{"black-holed: stopped at the bound", func(ctx context.Context) (*result.Result, error) {
			<-ctx.Done()
			return nil, errors.New("client failed: signal: killed")
		}, false, "stalled: the client gave no result within", 0, false},
		{"client failed", func(context.Context) (*result.Result, error) {
			return nil, errors.New("client failed: read server stats: i/o timeout")
		}, false, "stalled: client failed: read server stats: i/o timeout", 0, false},
		{"engine repeat failed", func(context.Context) (*result.Result, error) {
			return &result.Result{Schema: result.SchemaResult, Config: map[string]string{}, Repeats: []result.Repeat{{Error: "no data moved"}}}, nil
		}, false, "stalled: no data moved", 0, false},
		{"suite interrupted", func(ctx context.Context) (*result.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, true, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			pr := &prepared{correct: 8950, stall: 50 * time.Millisecond, env: scenario.Env{
				Path: backend.Path{Client: place("client1"), Target: "198.19.2.20:7000"},
				Run: func(ctx context.Context, _ backend.Place, a ...string) (*result.Result, error) {
					args = a
					return tt.run(ctx)
				}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				go func() { time.Sleep(10 * time.Millisecond); cancel() }()
			}
			t0 := time.Now()
			res, err := pr.Measure(ctx, scenario.Cell{Test: engine.TCPStream, Flows: 1}, scenario.Window{Warmup: 5 * time.Millisecond, Duration: 10 * time.Millisecond})
			if el := time.Since(t0); el > 2*time.Second {
				t.Errorf("took %v: not bounded", el)
			}
			if tt.fails {
				if err == nil {
					t.Fatalf("got %+v, want an error", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"run", "--target", "198.19.2.20:7000", "--test", "tcp_stream", "--flows", "1", "--duration", "10ms", "--warmup", "5ms", "--repeat", "1", "--format", "json", "-q"}
			if !slices.Equal(args, want) {
				t.Errorf("client args %v, want %v", args, want)
			}
			if len(res.Repeats) != 1 {
				t.Fatalf("%d repeats", len(res.Repeats))
			}
			r := res.Repeats[0]
			if tt.wantErr == "" {
				if r.Error != "" || r.Metrics[MetricDetectedOff] != tt.wantMetric || r.Metrics[MetricDetected] != 9000 {
					t.Errorf("repeat %+v", r)
				}
				return
			}
			if !strings.HasPrefix(r.Error, tt.wantErr) || res.Schema != result.SchemaResult {
				t.Errorf("repeat error %q, want %q…", r.Error, tt.wantErr)
			}
		})
	}
}
