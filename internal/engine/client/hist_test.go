package client

import (
	"math"
	"testing"
	"time"
)

func TestRecorderPercentiles(t *testing.T) {
	r := newRecorder(4)
	// 1..1000 µs, one of each, spread over flows (shards).
	for i := 1; i <= 1000; i++ {
		r.record(i, time.Duration(i)*time.Microsecond)
	}
	p := PercentilesOf(r.merged())
	checks := []struct {
		name      string
		got, want float64
	}{
		{"count", float64(p.Count), 1000},
		{"p50", p.P50, 500},
		{"p90", p.P90, 900},
		{"p99", p.P99, 990},
		{"p99.9", p.P999, 999},
		{"max", p.Max, 1000},
		{"mean", p.Mean, 500.5},
	}
	for _, c := range checks {
		// HdrHistogram with 3 significant digits: within 0.1 %.
		if math.Abs(c.got-c.want) > c.want*0.001+0.001 {
			t.Errorf("%s = %v, want %v ± 0.1%%", c.name, c.got, c.want)
		}
	}
	if !(p.P50 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.P999 && p.P999 <= p.Max) {
		t.Errorf("percentiles out of order: %+v", p)
	}
	r.reset()
	if n := r.merged().TotalCount(); n != 0 {
		t.Errorf("after reset: %d values", n)
	}
}

func TestRecorderClampsAndShards(t *testing.T) {
	r := newRecorder(1000)
	if len(r.shards) != maxShards {
		t.Fatalf("shards = %d, want %d", len(r.shards), maxShards)
	}
	r.record(0, 0)
	r.record(1, 2*time.Minute)
	p := PercentilesOf(r.merged())
	if p.Count != 2 || p.Max < 59e6 {
		t.Fatalf("clamping: %+v", p)
	}
}

func TestHistEncoding(t *testing.T) {
	r := newRecorder(1)
	for i := 1; i <= 100; i++ {
		r.record(0, time.Duration(i*37)*time.Microsecond)
	}
	h := r.merged()
	enc := encodeHist(h)
	if enc == "" {
		t.Fatal("empty encoding")
	}
	back, err := DecodeHist(enc)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if back.TotalCount() != h.TotalCount() || back.ValueAtQuantile(99) != h.ValueAtQuantile(99) {
		t.Fatalf("round trip changed the histogram: %d/%d", back.TotalCount(), h.TotalCount())
	}
	if encodeHist(newRecorder(1).merged()) != "" {
		t.Fatal("an empty histogram should encode as empty")
	}
}
