package client

import (
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/cnibench/cnibench/internal/engine/window"
)

// Latencies are recorded in nanoseconds with 3 significant digits (0.1 %
// resolution) from 1 ns to 60 s; longer values are clamped to 60 s.
const (
	histLowest  = 1
	histHighest = int64(60 * time.Second)
	histSigFigs = 3
	// maxShards bounds memory: each histogram is ~200 KiB.
	maxShards = 16
)

// recorder is a sharded latency histogram: flow i records into shard
// i % shards under that shard's mutex, so flows on different cores rarely
// contend while memory stays bounded for thousands of clients.
type recorder struct {
	shards []histShard
}

type histShard struct {
	mu sync.Mutex
	h  *hdr.Histogram
	_  [40]byte // keep shards on separate cache lines
}

func newRecorder(flows int) *recorder {
	n := flows
	if n > maxShards {
		n = maxShards
	}
	if n < 1 {
		n = 1
	}
	r := &recorder{shards: make([]histShard, n)}
	for i := range r.shards {
		r.shards[i].h = hdr.New(histLowest, histHighest, histSigFigs)
	}
	return r
}

func (r *recorder) record(flow int, d time.Duration) {
	v := int64(d)
	if v < histLowest {
		v = histLowest
	} else if v > histHighest {
		v = histHighest
	}
	s := &r.shards[flow%len(r.shards)]
	s.mu.Lock()
	_ = s.h.RecordValue(v)
	s.mu.Unlock()
}

// merged returns one histogram of all shards.
func (r *recorder) merged() *hdr.Histogram {
	out := hdr.New(histLowest, histHighest, histSigFigs)
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		out.Merge(s.h)
		s.mu.Unlock()
	}
	return out
}

func (r *recorder) reset() {
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		s.h.Reset()
		s.mu.Unlock()
	}
}

// PercentilesOf summarises h (values in ns) in µs.
func PercentilesOf(h *hdr.Histogram) window.Percentiles {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return window.Percentiles{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1e3,
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		Max:   us(h.Max()),
	}
}

// encodeHist returns the HdrHistogram V2 compressed, base64 encoding of h
// (readable by every HdrHistogram implementation), or "" on error.
func encodeHist(h *hdr.Histogram) string {
	if h.TotalCount() == 0 {
		return ""
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return ""
	}
	return string(b)
}

// DecodeHist decodes a histogram written by encodeHist.
func DecodeHist(s string) (*hdr.Histogram, error) {
	return hdr.Decode([]byte(s))
}
