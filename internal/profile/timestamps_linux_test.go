package profile

import (
	"errors"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestSessionTimestamps samples a spinning goroutine with Timestamps and
// checks that every sample's wall-clock time lies within the session and
// that cropping to the spin's second half keeps about half the samples.
func TestSessionTimestamps(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	before := time.Now()
	s, err := Start(Options{Frequency: 499, Timestamps: true})
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("sampling not supported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { profileTestSpin(stop); close(done) }()
	time.Sleep(400 * time.Millisecond)
	mid := time.Now()
	time.Sleep(400 * time.Millisecond)
	close(stop)
	<-done
	p, err := s.Stop()
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if p.Samples < 100 {
		t.Fatalf("%d samples in 0.8 s at 499 Hz", p.Samples)
	}
	lo := before.Add(-TimestampResolution).UnixNano()
	hi := after.UnixNano()
	for _, smp := range p.P.Sample {
		ts := smp.NumLabel[TimeLabel]
		if len(ts) != 1 || ts[0] < lo || ts[0] > hi {
			t.Fatalf("sample time %v outside the session [%d, %d]", ts, lo, hi)
		}
	}
	c, err := Crop(p, mid, after)
	if err != nil {
		t.Fatal(err)
	}
	if frac := float64(c.Samples) / float64(p.Samples); frac < 0.3 || frac > 0.7 {
		t.Errorf("the second half of the session holds %.2f of the samples (%d of %d), want about half", frac, c.Samples, p.Samples)
	}
}
