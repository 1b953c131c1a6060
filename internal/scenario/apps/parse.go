package apps

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// CurlFormat is curl's -w format: one line per transfer with the client's
// own report of it — total time (s), bytes downloaded, average download
// speed (bytes/s) and the response code (HTTP 200, FTP 226).
const CurlFormat = `%{time_total} %{size_download} %{speed_download} %{response_code}\n`

// transfer is one file transfer as its client reported it.
type transfer struct {
	Seconds float64
	Bytes   int64
	// Speed is the client's own bytes/s (curl's speed_download; 0 for
	// scp).
	Speed float64
	Code  int
}

// parseCurl parses curl's output with CurlFormat: one transfer per line.
// A line that is not four fields of the right types is an error naming
// it.
func parseCurl(out string) ([]transfer, error) {
	var ts []transfer
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("curl -w line %d %q: want 4 fields (time_total size_download speed_download response_code)", i+1, clip(line))
		}
		var t transfer
		var err error
		if t.Seconds, err = strconv.ParseFloat(f[0], 64); err != nil || !(t.Seconds >= 0) || math.IsInf(t.Seconds, 0) {
			return nil, fmt.Errorf("curl -w line %d: time_total %q is not a duration in seconds", i+1, clip(f[0]))
		}
		if t.Bytes, err = strconv.ParseInt(f[1], 10, 64); err != nil || t.Bytes < 0 {
			return nil, fmt.Errorf("curl -w line %d: size_download %q is not a byte count", i+1, clip(f[1]))
		}
		if t.Speed, err = strconv.ParseFloat(f[2], 64); err != nil || !(t.Speed >= 0) || math.IsInf(t.Speed, 0) {
			return nil, fmt.Errorf("curl -w line %d: speed_download %q is not a rate", i+1, clip(f[2]))
		}
		if t.Code, err = strconv.Atoi(f[3]); err != nil || t.Code < 0 {
			return nil, fmt.Errorf("curl -w line %d: response_code %q is not a code", i+1, clip(f[3]))
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// checkTransfers checks that every transfer moved want bytes with a
// success code of app (HTTP 200, FTP 226; scp has none).
func checkTransfers(app string, ts []transfer, want int64) error {
	for i, t := range ts {
		if t.Bytes != want {
			return fmt.Errorf("transfer %d: %d bytes, want %d", i+1, t.Bytes, want)
		}
		switch {
		case app == HTTP && t.Code != 200, app == FTP && t.Code != 226:
			return fmt.Errorf("transfer %d: response code %d", i+1, t.Code)
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// window is what a cell measured: its transfers, the wall time they took
// back to back, and the CPU seconds of the client and server processes
// over it.
type window struct {
	Transfers        []transfer
	Seconds          float64
	ClientCPUSeconds float64
	ServerCPUSeconds float64
}

// metrics are a window's result metrics: throughput (payload bits per
// second of wall time), transfers per second, per-transfer time
// percentiles (µs), the client's and server's CPU (% of a core).
func (w window) metrics() (map[string]float64, error) {
	if len(w.Transfers) == 0 || w.Seconds <= 0 {
		return nil, fmt.Errorf("no transfer completed in the window")
	}
	var bytes float64
	us := make([]float64, len(w.Transfers))
	for i, t := range w.Transfers {
		bytes += float64(t.Bytes)
		us[i] = t.Seconds * 1e6
	}
	slices.Sort(us)
	var sum float64
	for _, v := range us {
		sum += v
	}
	return map[string]float64{
		result.ThroughputBitsPerSec: bytes * 8 / w.Seconds,
		result.TransPerSec:          float64(len(w.Transfers)) / w.Seconds,
		result.LatencyUsMean:        sum / float64(len(us)),
		result.LatencyUsP50:         percentile(us, 50),
		result.LatencyUsP90:         percentile(us, 90),
		result.LatencyUsP99:         percentile(us, 99),
		result.LatencyUsMax:         us[len(us)-1],
		result.ClientCPUPct:         100 * w.ClientCPUSeconds / w.Seconds,
		result.ServerCPUPct:         100 * w.ServerCPUSeconds / w.Seconds,
	}, nil
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
