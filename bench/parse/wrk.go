package parse

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Wrk is wrk's text summary (wrk 4.1, Debian's package; with or without
// --latency).
type Wrk struct {
	Threads, Connections int
	// Requests is the "N requests in T" count: every complete response,
	// whatever its status.
	Requests int64
	// ReportedRPS is wrk's own "Requests/sec": Requests over the exact run
	// time (the "in 3.03s" figure is rounded; RunSec is Requests/ReportedRPS).
	ReportedRPS float64
	RunSec      float64
	// Non2xx is "Non-2xx or 3xx responses" (wrk counts status > 399).
	Non2xx int64
	// Socket errors: connect, read, write, timeout (absent line: all 0).
	ConnectErrors, ReadErrors, WriteErrors, Timeouts int64
	// LatencyAvgUS, LatencyMaxUS are the "Thread Stats" Latency column's
	// average and maximum in µs.
	LatencyAvgUS, LatencyMaxUS float64
	// Percentiles (50, 75, 90, 99) in µs, from --latency's "Latency
	// Distribution"; empty without --latency.
	Percentiles map[float64]float64
	// OKRPS is the responses that are not Non2xx divided by RunSec: the
	// figure comparable to cnibench's trans_per_sec (successful only).
	OKRPS float64
}

// SocketErrors is the sum of wrk's socket errors (connect, read, write,
// timeout).
func (w *Wrk) SocketErrors() int64 {
	return w.ConnectErrors + w.ReadErrors + w.WriteErrors + w.Timeouts
}

var (
	wrkThreads  = regexp.MustCompile(`^(\d+) threads and (\d+) connections$`)
	wrkLatency  = regexp.MustCompile(`^Latency\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$`)
	wrkPct      = regexp.MustCompile(`^(\d+(?:\.\d+)?)%\s+(\S+)$`)
	wrkRequests = regexp.MustCompile(`^(\d+) requests in (\S+), (\S+) read$`)
	wrkSocket   = regexp.MustCompile(`^Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)$`)
	wrkNon2xx   = regexp.MustCompile(`^Non-2xx or 3xx responses: (\d+)$`)
	wrkRPS      = regexp.MustCompile(`^Requests/sec:\s+(\S+)$`)
)

// wrkDuration converts one of wrk's time figures ("488.65us", "4.87ms",
// "0.90ms", "1.02s", "1.50m", "2.00h") to µs.
func wrkDuration(s string) (float64, bool) {
	units := []struct {
		suffix string
		us     float64
	}{{"us", 1}, {"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"h", 3600e6}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return 0, false
			}
			return v * u.us, true
		}
	}
	return 0, false
}

// ParseWrk parses wrk's summary. Output without "N requests in" and
// "Requests/sec" lines (wrk could not connect, usage), or a run in which
// no response had a 2xx/3xx status, is an error.
func ParseWrk(out []byte) (*Wrk, error) {
	w := &Wrk{Percentiles: map[float64]float64{}}
	var haveReq, haveRPS bool
	inDist := false
	for _, l := range splitLines(out) {
		if l == "" {
			continue
		}
		if l == "Latency Distribution" {
			inDist = true
			continue
		}
		if inDist {
			if m := wrkPct.FindStringSubmatch(l); m != nil {
				p, err1 := strconv.ParseFloat(m[1], 64)
				v, ok := wrkDuration(m[2])
				if err1 != nil || !ok || p <= 0 || p > 100 {
					return nil, noResult("wrk: latency line %q", l)
				}
				w.Percentiles[p] = v
				continue
			}
			inDist = false
		}
		switch {
		case wrkThreads.MatchString(l):
			m := wrkThreads.FindStringSubmatch(l)
			w.Threads, _ = strconv.Atoi(m[1])
			w.Connections, _ = strconv.Atoi(m[2])
		case wrkLatency.MatchString(l):
			m := wrkLatency.FindStringSubmatch(l)
			avg, ok1 := wrkDuration(m[1])
			max, ok2 := wrkDuration(m[3])
			if !ok1 || !ok2 {
				// wrk prints "-nan" columns when no request completed.
				continue
			}
			w.LatencyAvgUS, w.LatencyMaxUS = avg, max
		case wrkRequests.MatchString(l):
			m := wrkRequests.FindStringSubmatch(l)
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, noResult("wrk: %q: %v", l, err)
			}
			w.Requests, haveReq = n, true
		case wrkSocket.MatchString(l):
			m := wrkSocket.FindStringSubmatch(l)
			var vs [4]int64
			for i := range vs {
				v, err := strconv.ParseInt(m[i+1], 10, 64)
				if err != nil {
					return nil, noResult("wrk: %q: %v", l, err)
				}
				vs[i] = v
			}
			w.ConnectErrors, w.ReadErrors, w.WriteErrors, w.Timeouts = vs[0], vs[1], vs[2], vs[3]
		case wrkNon2xx.MatchString(l):
			n, err := strconv.ParseInt(wrkNon2xx.FindStringSubmatch(l)[1], 10, 64)
			if err != nil {
				return nil, noResult("wrk: %q: %v", l, err)
			}
			w.Non2xx = n
		case wrkRPS.MatchString(l):
			v, err := strconv.ParseFloat(wrkRPS.FindStringSubmatch(l)[1], 64)
			if err != nil {
				return nil, noResult("wrk: %q: %v", l, err)
			}
			if err := validNumber("wrk Requests/sec", v); err != nil {
				return nil, err
			}
			w.ReportedRPS, haveRPS = v, true
		}
	}
	if !haveReq || !haveRPS {
		return nil, noResult("wrk: no \"requests in\" and Requests/sec lines; output: %s", excerpt(out))
	}
	ok := w.Requests - w.Non2xx
	if ok <= 0 || w.ReportedRPS <= 0 {
		return nil, noResult("wrk: no 2xx/3xx responses (%d requests, %d non-2xx/3xx, socket errors %d)",
			w.Requests, w.Non2xx, w.SocketErrors())
	}
	w.RunSec = float64(w.Requests) / w.ReportedRPS
	w.OKRPS = float64(ok) / w.RunSec
	return w, nil
}
