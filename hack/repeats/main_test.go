package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// TestRun: only matching runs print, one line per repeat, a failed
// repeat and a missing metric said as such, values with their units.
func TestRun(t *testing.T) {
	set := result.Set{Schema: result.SchemaResults, Runs: []result.Run{
		{Labels: map[string]string{"test": "tcp_crr", "services": "1"}, Repeats: []result.Repeat{
			{Metrics: map[string]float64{result.TransPerSec: 2486, result.ConnectUsMax: 7900}},
			{Metrics: map[string]float64{result.TransPerSec: 549}},
			{Error: "client failed"},
		}},
		{Labels: map[string]string{"test": "tcp_rr", "services": "1"}, Repeats: []result.Repeat{
			{Metrics: map[string]float64{result.TransPerSec: 20161}},
		}},
	}}
	var doc, out bytes.Buffer
	if err := result.Write(&doc, set); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, doc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(&out, "test=tcp_crr", "services", "trans_per_sec,connect_us_max", []string{path}); err != nil {
		t.Fatal(err)
	}
	want := "services\trepeat\ttrans_per_sec\tconnect_us_max\n" +
		"1\t1\t2486 trans/s\t7900 µs\n" +
		"1\t2\t549 trans/s\t—\n" +
		"1\t3\tfailed\tfailed\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	if err := run(&out, "test", "", "trans_per_sec", []string{path}); err == nil || !strings.Contains(err.Error(), "LABEL=VALUE") {
		t.Errorf("-where test: error %v, want one naming LABEL=VALUE", err)
	}
	if err := run(&out, "", "", "", []string{path}); err == nil {
		t.Error("no -metrics: no error")
	}
}
