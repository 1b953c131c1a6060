// Package parse reads the outputs of the programs that `make bench` runs side
// by side: netperf's omni output selectors (-o), iperf3's JSON (-J), hey's
// and wrk's text summaries (wrk.go), GNU time's verbose report (-v) and cnibench's own
// cnibench/result/v1 document. Every parser returns an error rather than a
// zero value when the output is not what a successful run prints.
package parse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// ErrNoResult is wrapped by every parser error: the output holds no usable
// measurement.
var ErrNoResult = errors.New("no result in output")

func noResult(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrNoResult, fmt.Sprintf(format, a...))
}

// validNumber rejects NaN, ±Inf and negative values: none of the figures we
// read can legitimately be one of those.
func validNumber(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return noResult("%s is %v", name, v)
	}
	return nil
}

// Netperf is one netperf omni test's output, as selected with
// `-- -o THROUGHPUT,THROUGHPUT_UNITS,...`: column header -> value.
type Netperf struct {
	Fields map[string]string
	// Throughput is the THROUGHPUT column (Trans/s for _RR tests, 10^6bits/s
	// for _STREAM tests by default).
	Throughput float64
	// Units is the THROUGHPUT_UNITS column when selected ("" otherwise).
	Units string
}

// Netperf's human-readable column headers for the selectors we use.
const (
	NetperfThroughput = "Throughput"
	NetperfUnits      = "Throughput Units"
	NetperfP50        = "50th Percentile Latency Microseconds"
	NetperfP99        = "99th Percentile Latency Microseconds"
)

// ParseNetperf parses netperf's CSV omni output (`-- -o SEL1,SEL2`). It
// looks for the header line that starts with "Throughput," (or is exactly
// "Throughput") and reads the following line, so the test banner (present
// unless -P 0) is allowed before it. netperf's diagnostics ("establish
// control: are you sure there is a netserver listening ...") are returned
// in the error.
func ParseNetperf(out []byte) (*Netperf, error) {
	lines := splitLines(out)
	for i, l := range lines {
		if l != NetperfThroughput && !strings.HasPrefix(l, NetperfThroughput+",") {
			continue
		}
		if i+1 >= len(lines) {
			return nil, noResult("netperf: header %q without a value line", l)
		}
		hdr := strings.Split(l, ",")
		val := strings.Split(lines[i+1], ",")
		if len(hdr) != len(val) {
			return nil, noResult("netperf: %d columns in header %q but %d in values %q", len(hdr), l, len(val), lines[i+1])
		}
		n := &Netperf{Fields: make(map[string]string, len(hdr))}
		for j := range hdr {
			n.Fields[strings.TrimSpace(hdr[j])] = strings.TrimSpace(val[j])
		}
		tp, err := strconv.ParseFloat(n.Fields[NetperfThroughput], 64)
		if err != nil {
			return nil, noResult("netperf: throughput %q: %v", n.Fields[NetperfThroughput], err)
		}
		if err := validNumber("netperf throughput", tp); err != nil {
			return nil, err
		}
		n.Throughput = tp
		n.Units = n.Fields[NetperfUnits]
		return n, nil
	}
	return nil, noResult("netperf: no %q header line; output: %s", NetperfThroughput, excerpt(out))
}

// Float returns the named column as a number.
func (n *Netperf) Float(col string) (float64, error) {
	s, ok := n.Fields[col]
	if !ok {
		return 0, noResult("netperf: no column %q", col)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, noResult("netperf: column %q = %q: %v", col, s, err)
	}
	return v, validNumber(col, v)
}

// Iperf3 is the part of `iperf3 -c ... -J` output the harness uses.
type Iperf3 struct {
	// ReceivedBitsPerSec is end.sum_received.bits_per_second: goodput at
	// the receiver over the measured (non-omitted) seconds.
	ReceivedBitsPerSec float64
	// SentBitsPerSec is end.sum_sent.bits_per_second.
	SentBitsPerSec float64
	Retransmits    int64
	NumStreams     int
	Seconds        float64
}

type iperf3Sum struct {
	Seconds       float64 `json:"seconds"`
	Bytes         float64 `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *int64  `json:"retransmits"`
}

type iperf3Doc struct {
	Start struct {
		TestStart *struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		SumSent     *iperf3Sum `json:"sum_sent"`
		SumReceived *iperf3Sum `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
}

// ParseIperf3 parses iperf3's -J output of a TCP client run. iperf3 reports
// failures inside the JSON ("error") and may still exit 0; that is an error
// here.
func ParseIperf3(out []byte) (*Iperf3, error) {
	var d iperf3Doc
	if err := json.Unmarshal(bytes.TrimSpace(out), &d); err != nil {
		return nil, noResult("iperf3: not JSON (%v): %s", err, excerpt(out))
	}
	if d.Error != "" {
		return nil, noResult("iperf3: %s", d.Error)
	}
	if d.Start.TestStart == nil {
		return nil, noResult("iperf3: no start.test_start")
	}
	if p := d.Start.TestStart.Protocol; p != "TCP" {
		return nil, noResult("iperf3: protocol %q, want TCP", p)
	}
	if d.End.SumReceived == nil || d.End.SumSent == nil {
		return nil, noResult("iperf3: no end.sum_received/end.sum_sent (a UDP run, or the test did not finish)")
	}
	r := &Iperf3{
		ReceivedBitsPerSec: d.End.SumReceived.BitsPerSecond,
		SentBitsPerSec:     d.End.SumSent.BitsPerSecond,
		NumStreams:         d.Start.TestStart.NumStreams,
		Seconds:            d.End.SumReceived.Seconds,
	}
	if d.End.SumSent.Retransmits != nil {
		r.Retransmits = *d.End.SumSent.Retransmits
	}
	if err := validNumber("iperf3 received bits/s", r.ReceivedBitsPerSec); err != nil {
		return nil, err
	}
	if r.ReceivedBitsPerSec == 0 || r.Seconds <= 0 {
		return nil, noResult("iperf3: nothing received (%v bit/s over %v s)", r.ReceivedBitsPerSec, r.Seconds)
	}
	return r, nil
}

// Hey is hey's text summary (the default output).
type Hey struct {
	TotalSec float64 // "Total:" wall time of the run, incl. draining in-flight requests
	// ReportedRPS is hey's own "Requests/sec". Debian's hey 0.1.4 counts
	// failed requests in it too.
	ReportedRPS float64
	StatusCodes map[int]int64
	Errors      map[string]int64
	// OKRPS is the number of 2xx responses divided by TotalSec: the figure
	// comparable to cnibench's trans_per_sec, which counts successful
	// transactions only.
	OKRPS float64
}

// Responses returns the number of responses with a status code in [lo, hi].
func (h *Hey) Responses(lo, hi int) int64 {
	var n int64
	for c, k := range h.StatusCodes {
		if c >= lo && c <= hi {
			n += k
		}
	}
	return n
}

// ErrorCount returns the number of failed requests (no response at all).
func (h *Hey) ErrorCount() int64 {
	var n int64
	for _, k := range h.Errors {
		n += k
	}
	return n
}

var (
	heyTotal  = regexp.MustCompile(`^Total:\s+([0-9.]+|NaN) secs$`)
	heyRPS    = regexp.MustCompile(`^Requests/sec:\s+([0-9.]+|NaN)$`)
	heyStatus = regexp.MustCompile(`^\[(\d{3})\]\s+(\d+) responses$`)
	heyError  = regexp.MustCompile(`^\[(\d+)\]\s+(.*)$`)
)

// ParseHey parses hey's summary. A run in which not a single request got a
// 2xx response is an error (the error distribution is in the message).
func ParseHey(out []byte) (*Hey, error) {
	h := &Hey{StatusCodes: map[int]int64{}, Errors: map[string]int64{}}
	section := ""
	var haveTotal, haveRPS bool
	for _, l := range splitLines(out) {
		if l == "" {
			continue
		}
		if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, "[") {
			section = l
			continue
		}
		switch {
		case section == "Summary:" && heyTotal.MatchString(l):
			v, err := strconv.ParseFloat(heyTotal.FindStringSubmatch(l)[1], 64)
			if err != nil {
				return nil, noResult("hey: %q: %v", l, err)
			}
			h.TotalSec, haveTotal = v, true
		case section == "Summary:" && heyRPS.MatchString(l):
			v, err := strconv.ParseFloat(heyRPS.FindStringSubmatch(l)[1], 64)
			if err != nil {
				return nil, noResult("hey: %q: %v", l, err)
			}
			h.ReportedRPS, haveRPS = v, true
		case section == "Status code distribution:":
			m := heyStatus.FindStringSubmatch(l)
			if m == nil {
				return nil, noResult("hey: unexpected status line %q", l)
			}
			code, _ := strconv.Atoi(m[1])
			n, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil {
				return nil, noResult("hey: %q: %v", l, err)
			}
			h.StatusCodes[code] += n
		case section == "Error distribution:":
			m := heyError.FindStringSubmatch(l)
			if m == nil {
				return nil, noResult("hey: unexpected error line %q", l)
			}
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, noResult("hey: %q: %v", l, err)
			}
			h.Errors[m[2]] += n
		}
	}
	if !haveTotal || !haveRPS {
		return nil, noResult("hey: no Summary Total/Requests/sec; output: %s", excerpt(out))
	}
	ok := h.Responses(200, 299)
	if ok == 0 {
		return nil, noResult("hey: no 2xx responses (status codes %v, errors %v)", h.StatusCodes, h.Errors)
	}
	if h.TotalSec <= 0 || math.IsNaN(h.TotalSec) {
		return nil, noResult("hey: total time %v", h.TotalSec)
	}
	h.OKRPS = float64(ok) / h.TotalSec
	return h, nil
}

// TimeV is GNU time's verbose report (`/usr/bin/time -v -o FILE cmd`).
type TimeV struct {
	UserSec, SysSec float64
	MaxRSSBytes     int64
	VoluntaryCS     int64
	InvoluntaryCS   int64
	ExitStatus      int
}

// CPUSec is user + system CPU time.
func (t *TimeV) CPUSec() float64 { return t.UserSec + t.SysSec }

// ParseTimeV parses GNU time -v output. A non-zero exit status of the
// timed command is not an error here (it is in ExitStatus); a report
// without the maximum RSS line is.
func ParseTimeV(out []byte) (*TimeV, error) {
	t := &TimeV{}
	var haveRSS, haveExit bool
	for _, l := range splitLines(out) {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		var err error
		switch k {
		case "User time (seconds)":
			t.UserSec, err = strconv.ParseFloat(v, 64)
		case "System time (seconds)":
			t.SysSec, err = strconv.ParseFloat(v, 64)
		case "Maximum resident set size (kbytes)":
			var kb int64
			kb, err = strconv.ParseInt(v, 10, 64)
			t.MaxRSSBytes, haveRSS = kb*1024, err == nil
		case "Voluntary context switches":
			t.VoluntaryCS, err = strconv.ParseInt(v, 10, 64)
		case "Involuntary context switches":
			t.InvoluntaryCS, err = strconv.ParseInt(v, 10, 64)
		case "Exit status":
			t.ExitStatus, err = strconv.Atoi(v)
			haveExit = err == nil
		}
		if err != nil {
			return nil, noResult("time -v: %q: %v", l, err)
		}
	}
	if !haveRSS || !haveExit {
		return nil, noResult("time -v: no maximum RSS / exit status lines; output: %s", excerpt(out))
	}
	return t, nil
}

// Cnibench is the part of a `cnibench run --format json` document the
// harness uses: the metrics of its single successful repeat.
type Cnibench struct {
	Result  *result.Result
	Metrics map[string]float64
}

// ParseCnibench decodes a cnibench/result/v1 document of a run with exactly
// one repeat, which must have succeeded.
func ParseCnibench(out []byte) (*Cnibench, error) {
	var r result.Result
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return nil, noResult("cnibench: not JSON (%v): %s", err, excerpt(out))
	}
	if r.Schema != result.SchemaResult {
		return nil, noResult("cnibench: schema %q, want %q", r.Schema, result.SchemaResult)
	}
	if r.Interrupted {
		return nil, noResult("cnibench: run was interrupted")
	}
	if len(r.Repeats) != 1 {
		return nil, noResult("cnibench: %d repeats, want 1", len(r.Repeats))
	}
	rep := r.Repeats[0]
	if rep.Error != "" {
		return nil, noResult("cnibench: repeat failed: %s", rep.Error)
	}
	if len(rep.Metrics) == 0 {
		return nil, noResult("cnibench: repeat has no metrics")
	}
	return &Cnibench{Result: &r, Metrics: rep.Metrics}, nil
}

// Metric returns a metric of the repeat, an error if it is missing or not
// a valid non-negative number.
func (c *Cnibench) Metric(name string) (float64, error) {
	v, ok := c.Metrics[name]
	if !ok {
		return 0, noResult("cnibench: no metric %q", name)
	}
	return v, validNumber("cnibench "+name, v)
}

func splitLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		out = append(out, strings.TrimSpace(sc.Text()))
	}
	return out
}

func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return strconv.Quote(s)
}
