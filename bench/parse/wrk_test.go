package parse

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The samples are wrk 4.1.0 (Debian 4.1.0-3+b2) runs on this machine:
// against bench/httpserver (1 KiB body, -H "Connection: close"), against
// python3 -m http.server on a missing path (404s), against a server that
// resets or drops connections, and against a closed port.
func TestParseWrk(t *testing.T) {
	for _, tc := range []struct {
		file                       string
		threads, conns             int
		requests, non2xx           int64
		rps                        float64
		connE, readE, writeE, tout int64
		avg, max                   float64
		pct                        map[float64]float64
	}{
		{file: "wrk_200_close_latency.txt", threads: 2, conns: 200, requests: 86443, rps: 28517.20,
			avg: 4870, max: 23470, pct: map[float64]float64{50: 4690, 75: 6420, 90: 8050, 99: 12830}},
		{file: "wrk_1000_close_latency.txt", threads: 2, conns: 1000, requests: 82991, rps: 27035.43,
			avg: 21690, max: 71720, pct: map[float64]float64{50: 19830, 75: 30360, 90: 38850, 99: 53150}},
		{file: "wrk_socket_errors.txt", threads: 2, conns: 20, requests: 20, rps: 6.58, readE: 17, writeE: 3,
			avg: 488.65, max: 900, pct: map[float64]float64{50: 483, 75: 828, 90: 870, 99: 900}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			w, err := ParseWrk(read(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if w.Threads != tc.threads || w.Connections != tc.conns || w.Requests != tc.requests || w.Non2xx != tc.non2xx ||
				!near(w.ReportedRPS, tc.rps) {
				t.Errorf("got %+v", w)
			}
			if w.ConnectErrors != tc.connE || w.ReadErrors != tc.readE || w.WriteErrors != tc.writeE || w.Timeouts != tc.tout {
				t.Errorf("socket errors: got %+v", w)
			}
			if w.SocketErrors() != tc.connE+tc.readE+tc.writeE+tc.tout {
				t.Errorf("SocketErrors() = %d", w.SocketErrors())
			}
			if !near(w.LatencyAvgUS, tc.avg) || !near(w.LatencyMaxUS, tc.max) {
				t.Errorf("latency avg/max = %v/%v µs, want %v/%v", w.LatencyAvgUS, w.LatencyMaxUS, tc.avg, tc.max)
			}
			if len(w.Percentiles) != len(tc.pct) {
				t.Errorf("percentiles %v, want %v", w.Percentiles, tc.pct)
			}
			for p, v := range tc.pct {
				if !near(w.Percentiles[p], v) {
					t.Errorf("p%v = %v µs, want %v", p, w.Percentiles[p], v)
				}
			}
			if !near(w.OKRPS, tc.rps) || !near(w.RunSec, float64(tc.requests)/tc.rps) {
				t.Errorf("OKRPS %v RunSec %v", w.OKRPS, w.RunSec)
			}
		})
	}
}

// Non-2xx responses count in wrk's Requests/sec; the harness compares
// 2xx/3xx responses per second only.
func TestParseWrkMixed(t *testing.T) {
	in := "Running 2s test @ http://x/\n  2 threads and 10 connections\n" +
		"  1000 requests in 2.00s, 1.00MB read\n  Non-2xx or 3xx responses: 250\n" +
		"Requests/sec:    500.00\nTransfer/sec:      0.50MB\n"
	w, err := ParseWrk([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !near(w.RunSec, 2) || !near(w.OKRPS, 375) || w.Non2xx != 250 || len(w.Percentiles) != 0 {
		t.Errorf("got %+v", w)
	}
}

func TestParseWrkErrors(t *testing.T) {
	for name, in := range map[string]string{
		"refused":     string(read(t, "wrk_refused.txt")),
		"only 404":    string(read(t, "wrk_non2xx.txt")),
		"empty":       "",
		"usage":       "Usage: wrk <options> <url>\n",
		"no rps":      "  10 requests in 1.00s, 1KB read\n",
		"no requests": "Requests/sec: 10.00\n",
		"zero":        "  0 requests in 1.00s, 0B read\nRequests/sec:      0.00\n",
		"nan rps":     "  10 requests in 1.00s, 1KB read\nRequests/sec: NaN\n",
		"bad pct":     "  Latency Distribution\n     50%    4.69xs\n  10 requests in 1.00s, 1KB read\nRequests/sec: 10\n",
	} {
		t.Run(name, func(t *testing.T) {
			w, err := ParseWrk([]byte(in))
			if !errors.Is(err, ErrNoResult) {
				t.Fatalf("got %+v, %v; want ErrNoResult", w, err)
			}
		})
	}
	_, err := ParseWrk(read(t, "wrk_refused.txt"))
	if !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error does not carry wrk's message: %v", err)
	}
}

func TestWrkDuration(t *testing.T) {
	for in, want := range map[string]float64{"488.65us": 488.65, "4.87ms": 4870, "1.02s": 1.02e6, "1.50m": 90e6, "2.00h": 7200e6} {
		if v, ok := wrkDuration(in); !ok || !near(v, want) {
			t.Errorf("wrkDuration(%q) = %v, %v; want %v", in, v, ok, want)
		}
	}
	for _, in := range []string{"", "ms", "-1ms", "-nanus", "1.0x", "NaNs"} {
		if v, ok := wrkDuration(in); ok {
			t.Errorf("wrkDuration(%q) = %v, want failure", in, v)
		}
	}
}

// FuzzParseWrk: arbitrary output never panics the parser, and an accepted
// result is a usable measurement.
func FuzzParseWrk(f *testing.F) {
	for _, name := range []string{"wrk_200_close_latency.txt", "wrk_socket_errors.txt", "wrk_non2xx.txt", "wrk_refused.txt"} {
		b, err := readFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		w, err := ParseWrk(in)
		if err != nil {
			if !errors.Is(err, ErrNoResult) {
				t.Fatalf("error %v does not wrap ErrNoResult", err)
			}
			return
		}
		if !(w.OKRPS > 0) || !(w.RunSec > 0) || w.Requests <= w.Non2xx || w.OKRPS > w.ReportedRPS*(1+1e-9) {
			t.Fatalf("accepted an impossible result: %+v", w)
		}
		for p, v := range w.Percentiles {
			if p <= 0 || p > 100 || v < 0 {
				t.Fatalf("impossible percentile %v: %v", p, v)
			}
		}
	})
}

func readFile(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }
