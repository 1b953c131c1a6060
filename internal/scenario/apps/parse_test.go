package apps

import (
	"math"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func TestParseCurl(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []transfer
		err  string
	}{
		{"two", "0.000423 4096 9683215 200\n0.000129 4096 31751937 200\n",
			[]transfer{{0.000423, 4096, 9683215, 200}, {0.000129, 4096, 31751937, 200}}, ""},
		{"ftp, no final newline", "0.003633 4096 1127442 226", []transfer{{0.003633, 4096, 1127442, 226}}, ""},
		{"blank lines", "\n\n0.5 10 20 200\n\n", []transfer{{0.5, 10, 20, 200}}, ""},
		{"empty", "", nil, ""},
		{"three fields", "0.1 10 20\n", nil, "want 4 fields"},
		{"bad time", "x 10 20 200", nil, "time_total"},
		{"negative time", "-1 10 20 200", nil, "time_total"},
		{"nan time", "NaN 10 20 200", nil, "time_total"},
		{"bad size", "0.1 1e3 20 200", nil, "size_download"},
		{"inf speed", "0.1 10 +Inf 200", nil, "speed_download"},
		{"bad code", "0.1 10 20 OK", nil, "response_code"},
	}
	for _, tt := range tests {
		got, err := parseCurl(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case len(got) != len(tt.want):
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		default:
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("%s: transfer %d %+v, want %+v", tt.name, i, got[i], tt.want[i])
				}
			}
		}
	}
}

func FuzzParseCurl(f *testing.F) {
	f.Add("0.000423 4096 9683215 200\n0.000129 4096 31751937 200\n")
	f.Add("0.1 10 20")
	f.Add("1e309 1 1 1")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := parseCurl(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		for _, x := range ts {
			if !(x.Seconds >= 0) || math.IsInf(x.Seconds, 0) || x.Bytes < 0 || !(x.Speed >= 0) || x.Code < 0 {
				t.Errorf("accepted %+v from %q", x, s)
			}
		}
	})
}

func TestCheckTransfers(t *testing.T) {
	ok := []transfer{{0.1, 4096, 1, 200}}
	if err := checkTransfers(HTTP, ok, 4096); err != nil {
		t.Error(err)
	}
	if err := checkTransfers(HTTP, ok, 4097); err == nil || !strings.Contains(err.Error(), "4096 bytes, want 4097") {
		t.Errorf("short transfer: %v", err)
	}
	if err := checkTransfers(FTP, ok, 4096); err == nil || !strings.Contains(err.Error(), "response code 200") {
		t.Errorf("FTP with an HTTP code: %v", err)
	}
	if err := checkTransfers(SCP, []transfer{{0.1, 4096, 0, 0}}, 4096); err != nil {
		t.Error(err)
	}
}

// A window's metrics: throughput and rate over the wall time, per-transfer
// percentiles (nearest rank) in µs, CPU as % of a core.
func TestWindowMetrics(t *testing.T) {
	var w window
	for i := 1; i <= 100; i++ {
		w.Transfers = append(w.Transfers, transfer{Seconds: float64(i) / 1e3, Bytes: 1000})
	}
	w.Seconds, w.ClientCPUSeconds, w.ServerCPUSeconds = 2, 0.5, 1
	m, err := w.metrics()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		result.ThroughputBitsPerSec: 100 * 1000 * 8 / 2,
		result.TransPerSec:          50,
		result.LatencyUsP50:         50e3,
		result.LatencyUsP90:         90e3,
		result.LatencyUsP99:         99e3,
		result.LatencyUsMax:         100e3,
		result.LatencyUsMean:        50.5e3,
		result.ClientCPUPct:         25,
		result.ServerCPUPct:         50,
	}
	for k, v := range want {
		if math.Abs(m[k]-v) > 1e-6*v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if _, err := (window{Seconds: 1}).metrics(); err == nil {
		t.Error("an empty window has metrics")
	}
	if p := percentile([]float64{7}, 99); p != 7 {
		t.Errorf("percentile of one value: %v", p)
	}
}
