package parse

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestParseNetperf(t *testing.T) {
	for _, tc := range []struct {
		file     string
		tp       float64
		p50, p99 float64
	}{
		{"netperf_tcp_rr.txt", 38012.13, 16, 61},
		{"netperf_tcp_crr.txt", 7466.51, 74, 2400},
	} {
		t.Run(tc.file, func(t *testing.T) {
			n, err := ParseNetperf(read(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !near(n.Throughput, tc.tp) || n.Units != "Trans/s" {
				t.Errorf("throughput = %v %q, want %v Trans/s", n.Throughput, n.Units, tc.tp)
			}
			p50, err := n.Float(NetperfP50)
			if err != nil || p50 != tc.p50 {
				t.Errorf("p50 = %v, %v; want %v", p50, err, tc.p50)
			}
			p99, err := n.Float(NetperfP99)
			if err != nil || p99 != tc.p99 {
				t.Errorf("p99 = %v, %v; want %v", p99, err, tc.p99)
			}
			if _, err := n.Float("no such column"); !errors.Is(err, ErrNoResult) {
				t.Errorf("missing column: err = %v", err)
			}
		})
	}
}

func TestParseNetperfErrors(t *testing.T) {
	for name, in := range map[string]string{
		"refused":        string(read(t, "netperf_refused.txt")),
		"empty":          "",
		"header only":    "Throughput,Throughput Units\n",
		"column count":   "Throughput,Throughput Units\n123.4\n",
		"not a number":   "Throughput,Throughput Units\nabc,Trans/s\n",
		"negative":       "Throughput\n-1\n",
		"nan":            "Throughput\nnan\n",
		"other selector": "Local Send Socket Size Bytes\n16384\n",
	} {
		t.Run(name, func(t *testing.T) {
			n, err := ParseNetperf([]byte(in))
			if !errors.Is(err, ErrNoResult) {
				t.Fatalf("got %+v, %v; want ErrNoResult", n, err)
			}
		})
	}
	_, err := ParseNetperf(read(t, "netperf_refused.txt"))
	if !strings.Contains(err.Error(), "are you sure there is a netserver listening") {
		t.Errorf("error does not carry netperf's diagnostic: %v", err)
	}
}

func TestParseNetperfNoBanner(t *testing.T) {
	// -P 0 suppresses the banner but keeps the header of -o output.
	n, err := ParseNetperf([]byte("Throughput\n39702.90\n"))
	if err != nil || n.Throughput != 39702.90 || n.Units != "" {
		t.Fatalf("got %+v, %v", n, err)
	}
}

func TestParseIperf3(t *testing.T) {
	r, err := ParseIperf3(read(t, "iperf3_stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.ReceivedBitsPerSec, 17408508476.69091) {
		t.Errorf("received = %v", r.ReceivedBitsPerSec)
	}
	if r.NumStreams != 1 || r.SentBitsPerSec <= 0 || r.Seconds < 1.9 {
		t.Errorf("got %+v", r)
	}
}

func TestParseIperf3Errors(t *testing.T) {
	for name, in := range map[string]string{
		"refused":   string(read(t, "iperf3_refused.json")),
		"empty":     "",
		"text":      "iperf3: error - unable to connect to server",
		"no end":    `{"start":{"test_start":{"protocol":"TCP","num_streams":1}},"end":{}}`,
		"udp":       `{"start":{"test_start":{"protocol":"UDP","num_streams":1}},"end":{"sum":{"bits_per_second":1}}}`,
		"zero":      `{"start":{"test_start":{"protocol":"TCP","num_streams":1}},"end":{"sum_sent":{"bits_per_second":0},"sum_received":{"seconds":1,"bits_per_second":0}}}`,
		"truncated": string(read(t, "iperf3_stream.json"))[:500],
	} {
		t.Run(name, func(t *testing.T) {
			r, err := ParseIperf3([]byte(in))
			if !errors.Is(err, ErrNoResult) {
				t.Fatalf("got %+v, %v; want ErrNoResult", r, err)
			}
		})
	}
	_, err := ParseIperf3(read(t, "iperf3_refused.json"))
	if !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error does not carry iperf3's message: %v", err)
	}
}

func TestParseHey(t *testing.T) {
	h, err := ParseHey(read(t, "hey_1000_nokeepalive.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalSec != 1.0738 || h.ReportedRPS != 4815.5687 || h.StatusCodes[200] != 5171 || len(h.Errors) != 0 {
		t.Errorf("got %+v", h)
	}
	if !near(h.OKRPS, 5171/1.0738) {
		t.Errorf("OKRPS = %v", h.OKRPS)
	}
}

// Debian's hey 0.1.4 counts failed requests in Requests/sec: the harness
// must use 2xx responses only.
const heyMixed = `
Summary:
  Total:	2.0000 secs
  Slowest:	0.5000 secs
  Fastest:	0.0100 secs
  Average:	0.2000 secs
  Requests/sec:	5000.0000
  
  Total data:	4096000 bytes
  Size/request:	1024 bytes

Response time histogram:
  0.010 [1]	|

Latency distribution:
  10% in 0.1261 secs

Details (average, fastest, slowest):
  DNS+dialup:	0.0858 secs, 0.0132 secs, 0.5217 secs

Status code distribution:
  [200]	7000 responses
  [503]	1000 responses

Error distribution:
  [1500]	Get "http://127.0.0.1:22880/": dial tcp 127.0.0.1:22880: connect: connection reset by peer
  [500]	Get "http://127.0.0.1:22880/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)
`

func TestParseHeyMixed(t *testing.T) {
	h, err := ParseHey([]byte(heyMixed))
	if err != nil {
		t.Fatal(err)
	}
	if h.OKRPS != 3500 || h.ReportedRPS != 5000 || h.ErrorCount() != 2000 || h.Responses(500, 599) != 1000 {
		t.Errorf("got %+v (errors %d)", h, h.ErrorCount())
	}
}

func TestParseHeyErrors(t *testing.T) {
	for name, in := range map[string]string{
		"refused":    string(read(t, "hey_refused.txt")),
		"empty":      "",
		"usage":      "Usage: hey [options...] <url>\n",
		"only 5xx":   "Summary:\n  Total:\t1.0 secs\n  Requests/sec:\t10\nStatus code distribution:\n  [500]\t10 responses\n",
		"bad status": "Summary:\n  Total:\t1.0 secs\n  Requests/sec:\t10\nStatus code distribution:\n  [200]\tten responses\n",
	} {
		t.Run(name, func(t *testing.T) {
			h, err := ParseHey([]byte(in))
			if !errors.Is(err, ErrNoResult) {
				t.Fatalf("got %+v, %v; want ErrNoResult", h, err)
			}
		})
	}
	_, err := ParseHey(read(t, "hey_refused.txt"))
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error does not carry hey's error distribution: %v", err)
	}
}

func TestParseTimeV(t *testing.T) {
	tv, err := ParseTimeV(read(t, "time_v_hey.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if tv.MaxRSSBytes != 86336*1024 || tv.UserSec != 0.38 || tv.SysSec != 0.42 || tv.ExitStatus != 0 ||
		tv.VoluntaryCS != 848 || tv.InvoluntaryCS != 3458 {
		t.Errorf("got %+v", tv)
	}
	if !near(tv.CPUSec(), 0.80) {
		t.Errorf("CPUSec = %v", tv.CPUSec())
	}
	tv, err = ParseTimeV(read(t, "time_v_fail.txt"))
	if err != nil || tv.ExitStatus != 3 {
		t.Errorf("failed command: %+v, %v", tv, err)
	}
	for name, in := range map[string]string{
		"empty":   "",
		"garbage": "Command terminated by signal 9\n",
		"bad rss": "Maximum resident set size (kbytes): many\nExit status: 0\n",
	} {
		t.Run(name, func(t *testing.T) {
			if tv, err := ParseTimeV([]byte(in)); !errors.Is(err, ErrNoResult) {
				t.Fatalf("got %+v, %v; want ErrNoResult", tv, err)
			}
		})
	}
}

func TestParseCnibench(t *testing.T) {
	c, err := ParseCnibench(read(t, "cnibench_http_1000.json"))
	if err != nil {
		t.Fatal(err)
	}
	tps, err := c.Metric("trans_per_sec")
	if err != nil || !near(tps, 5781.695023142557) {
		t.Errorf("trans_per_sec = %v, %v", tps, err)
	}
	rss, err := c.Metric("client_max_rss_bytes")
	if err != nil || rss != 46424064 {
		t.Errorf("client_max_rss_bytes = %v, %v", rss, err)
	}
	if c.Result.Config["flows"] != "1000" || c.Result.Config["http_keepalive"] != "false" {
		t.Errorf("config = %v", c.Result.Config)
	}
	if _, err := c.Metric("nope"); !errors.Is(err, ErrNoResult) {
		t.Errorf("missing metric: %v", err)
	}
	s, err := ParseCnibench(read(t, "cnibench_tcp_stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Metric("throughput_rx_bits_per_sec"); err != nil || v < 1e9 {
		t.Errorf("throughput_rx_bits_per_sec = %v, %v", v, err)
	}
}

func TestParseCnibenchErrors(t *testing.T) {
	good := string(read(t, "cnibench_tcp_stream.json"))
	for name, in := range map[string]string{
		"empty":       "",
		"text output": "tcp_rr  127.0.0.1  41940 trans/s\n",
		"schema":      strings.Replace(good, `"cnibench/result/v1"`, `"cnibench/results/v1"`, 1),
		"failed":      strings.Replace(good, `"metrics"`, `"error": "connection refused", "metrics"`, 1),
		"interrupted": strings.Replace(good, `"schema"`, `"interrupted": true, "schema"`, 1),
		"no repeats":  `{"schema":"cnibench/result/v1","repeats":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := ParseCnibench([]byte(in)); !errors.Is(err, ErrNoResult) {
				t.Fatalf("got %+v, %v; want ErrNoResult", c, err)
			}
		})
	}
}
