package suite

import (
	"context"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/pkg/result"
)

// busyBackend's deployments report foreign CPU through foreign.
type busyBackend struct {
	fakeBackend
	foreign func(n int) float64
}

func (b *busyBackend) Up(ctx context.Context, spec backend.Spec) (backend.Deployment, error) {
	d, err := b.fakeBackend.Up(ctx, spec)
	if err == nil {
		d.(*fakeDeployment).foreign = b.foreign
	}
	return d, err
}

func busyOptions(t *testing.T, b *busyBackend, retries int) Options {
	o := fakeOptions(t, &b.fakeBackend)
	o.Backend = b
	o.Tests = []string{result.TestTCPRR}
	o.Repeat = 4
	o.Interference = Interference{ThresholdPct: 25, Retries: retries}
	return o
}

// The rule of docs/interference.md on a host busy for the first runs only,
// and on one busy throughout.
func TestInterferenceRule(t *testing.T) {
	t.Run("busy at first: re-run, graded from clean repeats", func(t *testing.T) {
		// The first 2 client runs see a hog (80 % of a core), then quiet.
		b := &busyBackend{foreign: func(n int) float64 {
			if n < 2 {
				return 80
			}
			return 2
		}}
		out, err := (&Runner{}).Run(context.Background(), busyOptions(t, b, 1))
		if err != nil {
			t.Fatal(err)
		}
		busyRuns := 0
		for _, r := range out.Set.Runs {
			clean, busy := result.CleanRepeats(r.Repeats)
			if r.NotTrusted != "" {
				t.Errorf("%v: not trusted (%s) with %d clean repeats", r.Labels, r.NotTrusted, clean)
			}
			if busy == 0 {
				continue
			}
			busyRuns++
			// Re-run up to the 4 repeats asked, every repeat kept.
			if clean != 4 || len(r.Repeats) != 4+busy || !r.Repeats[len(r.Repeats)-1].Rerun {
				t.Errorf("%v: %d clean, %d busy, %d repeats; want 4 clean and the busy kept", r.Labels, clean, busy, len(r.Repeats))
			}
			if !strings.Contains(r.Repeats[0].Busy+r.Repeats[1].Busy, "other programs used 80 % of a core (threshold 25 %)") {
				t.Errorf("%v: busy repeats not marked: %+v", r.Labels, r.Repeats)
			}
			// The summary counts clean repeats only.
			if s := r.Summary[result.TransPerSec]; s.Min != 1000-5*2 {
				t.Errorf("%v: summary includes busy repeats: %+v", r.Labels, s)
			}
		}
		in := out.Set.Interference
		if busyRuns == 0 || in == nil || in.Busy != 2 || in.Reruns != 2 || in.NotTrusted != 0 || in.Touched != busyRuns || in.MaxPct != 80 {
			t.Errorf("interference %+v over %d busy runs", in, busyRuns)
		}
	})
	t.Run("busy throughout: not trusted, bounded re-runs", func(t *testing.T) {
		b := &busyBackend{foreign: func(int) float64 { return 90 }}
		o := busyOptions(t, b, 2)
		out, err := (&Runner{}).Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		cells := len(out.Set.Runs)
		for _, r := range out.Set.Runs {
			// 4 asked, then 4 more in each of 2 rounds: 12, all busy.
			if len(r.Repeats) != 12 || !strings.Contains(r.NotTrusted, "not trusted: the host was busy (median 90 % of a core used by other programs)") {
				t.Errorf("%v: %d repeats, not trusted %q", r.Labels, len(r.Repeats), r.NotTrusted)
			}
			// Its values stay, for the tables.
			if s := r.Summary[result.TransPerSec]; s.N != 12 {
				t.Errorf("%v: summary of %d repeats, want all 12", r.Labels, s.N)
			}
		}
		in := out.Set.Interference
		if in == nil || in.NotTrusted != cells || in.Busy != 12*cells || in.Reruns != 8*cells || in.MedianPct != 90 {
			t.Errorf("interference %+v, %d cells", in, cells)
		}
		if out.Set.Config["busy_threshold_pct"] != "25" || out.Set.Config["busy_retries"] != "2" {
			t.Errorf("config %v does not record the rule", out.Set.Config)
		}
	})
	t.Run("threshold 0 marks nothing", func(t *testing.T) {
		b := &busyBackend{foreign: func(int) float64 { return 90 }}
		o := busyOptions(t, b, 2)
		o.Interference.ThresholdPct = 0
		out, err := (&Runner{}).Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Set.Runs {
			if _, busy := result.CleanRepeats(r.Repeats); busy != 0 || len(r.Repeats) != 4 || r.NotTrusted != "" {
				t.Errorf("%v: marked with the rule off", r.Labels)
			}
		}
		if in := out.Set.Interference; in == nil || in.MedianPct != 90 || in.Busy != 0 {
			t.Errorf("interference %+v: still measured with the rule off", in)
		}
	})
}

func TestInterferenceValidate(t *testing.T) {
	for _, tt := range []struct {
		i    Interference
		want string
	}{
		{Interference{ThresholdPct: -1}, "--busy-threshold -1"},
		{Interference{Retries: 11}, "--busy-retries 11"},
		{Interference{IdleProbe: -1}, "--idle-probe"},
	} {
		if err := tt.i.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("validate(%+v) = %v, want %q", tt.i, err, tt.want)
		}
	}
}
