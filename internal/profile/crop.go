package profile

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/pprof/profile"
)

// Span is a wall-clock window [From, To).
type Span struct {
	From, To time.Time
}

// Crop returns the samples of p (taken with Options.Timestamps) whose time
// is in [from, to), without the TimeLabel label; p is not changed.
func Crop(p *Profile, from, to time.Time) (*Profile, error) {
	return CropSpans(p, Span{From: from, To: to})
}

// CropSpans returns the samples of p (taken with Options.Timestamps) whose
// time is in one of spans, without the TimeLabel label, and identical
// stacks aggregated; p is not changed. Window is the part of the spans
// within p's own window (P.TimeNanos and DurationNanos), Windows the number
// of spans; Lost is p's (the kernel does not say when a sample was lost).
// A sample's time is the start of its TimestampResolution bucket, so a
// span's edges are placed to that precision.
func CropSpans(p *Profile, spans ...Span) (*Profile, error) {
	if p == nil || p.P == nil {
		return nil, errors.New("profile: crop: empty profile")
	}
	if len(spans) == 0 {
		return nil, errors.New("profile: crop: no window given")
	}
	for i, s := range spans {
		if !s.To.After(s.From) {
			return nil, fmt.Errorf("profile: crop: window %d ends at %s, not after its start %s: give windows as [from, to) with to > from",
				i, s.To.UTC().Format(time.RFC3339Nano), s.From.UTC().Format(time.RFC3339Nano))
		}
	}
	q := p.P.Copy()
	vi := valueIndex(q, "samples")
	kept := q.Sample[:0]
	samples := 0
	for _, s := range q.Sample {
		t := s.NumLabel[TimeLabel]
		if len(t) != 1 {
			return nil, fmt.Errorf("profile: crop: a sample has no %s label: take the profile with Options.Timestamps", TimeLabel)
		}
		if !inSpans(t[0], spans) {
			continue
		}
		delete(s.NumLabel, TimeLabel)
		delete(s.NumUnit, TimeLabel)
		if len(s.NumUnit) == 0 {
			s.NumUnit = nil
		}
		if vi < len(s.Value) {
			samples += int(s.Value[vi])
		}
		kept = append(kept, s)
	}
	q.Sample = kept
	var window time.Duration
	start := time.Unix(0, q.TimeNanos)
	end := start.Add(time.Duration(q.DurationNanos))
	for _, s := range spans {
		from, to := s.From, s.To
		if q.TimeNanos != 0 {
			from, to = later(from, start), earlier(to, end)
		}
		if to.After(from) {
			window += to.Sub(from)
		}
	}
	q.DurationNanos = int64(window)
	if len(q.Sample) > 0 {
		// Merge the samples that now have the same stack and labels, and
		// drop the locations and functions no sample uses.
		m, err := profile.Merge([]*profile.Profile{q})
		if err != nil {
			return nil, fmt.Errorf("profile: crop: %w", err)
		}
		q = m
	}
	out := &Profile{P: q, Samples: samples, Lost: p.Lost, Frequency: p.Frequency, CPUs: p.CPUs,
		Window: window, ReaderCPU: p.ReaderCPU, Windows: len(spans)}
	out.setMeta()
	return out, nil
}

func inSpans(ns int64, spans []Span) bool {
	for _, s := range spans {
		if ns >= s.From.UnixNano() && ns < s.To.UnixNano() {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// valueIndex is the index of a sample type in p's values (0 if absent).
func valueIndex(p *profile.Profile, typ string) int {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return 0
}
