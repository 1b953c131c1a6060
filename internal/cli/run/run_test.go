package run

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

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
