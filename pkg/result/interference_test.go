package result

import (
	"strings"
	"testing"
)

func TestUsedRepeats(t *testing.T) {
	m := func(v float64) map[string]float64 { return map[string]float64{TransPerSec: v} }
	reps := []Repeat{
		{Metrics: m(10)},
		{Metrics: m(1), Busy: "other programs used 90 % of a core"},
		{Error: "client failed"},
		{Metrics: m(12)},
	}
	got := UsedRepeats(reps)
	if len(got) != 2 || got[0].Metrics[TransPerSec] != 10 || got[1].Metrics[TransPerSec] != 12 {
		t.Errorf("UsedRepeats = %+v, want the two clean repeats", got)
	}
	if s := SummarizeRepeats(reps)[TransPerSec]; s.N != 2 || s.Min != 10 {
		t.Errorf("summary counts busy or failed repeats: %+v", s)
	}
	// Every repeat busy: the values stay (the run is marked not trusted).
	allBusy := []Repeat{{Metrics: m(1), Busy: "x"}, {Metrics: m(2), Busy: "y"}, {Error: "e"}}
	if got := UsedRepeats(allBusy); len(got) != 2 {
		t.Errorf("UsedRepeats of busy repeats = %d, want 2", len(got))
	}
	if c, b := CleanRepeats(reps); c != 2 || b != 1 {
		t.Errorf("CleanRepeats = %d, %d; want 2, 1", c, b)
	}
}

func TestEnoughClean(t *testing.T) {
	tests := []struct {
		clean, asked int
		want         bool
	}{{12, 12, true}, {6, 12, true}, {5, 12, false}, {2, 3, true}, {1, 1, false}, {1, 2, false}, {2, 2, true}, {0, 5, false}}
	for _, tt := range tests {
		if got := EnoughClean(tt.clean, tt.asked); got != tt.want {
			t.Errorf("EnoughClean(%d, %d) = %v", tt.clean, tt.asked, got)
		}
	}
}

func TestInterferencePct(t *testing.T) {
	tests := []struct {
		m    map[string]float64
		want float64
		ok   bool
	}{
		{map[string]float64{ForeignCPUPct: 20, StealPct: 5}, 25, true},
		{map[string]float64{ForeignCPUPct: 20, RemoteForeignCPUPct: 70, RemoteStealPct: 1}, 71, true},
		{map[string]float64{HostCPUPct: 100}, 0, false},
	}
	for _, tt := range tests {
		got, ok := InterferencePct(tt.m)
		if got != tt.want || ok != tt.ok {
			t.Errorf("InterferencePct(%v) = %v, %v; want %v, %v", tt.m, got, ok, tt.want, tt.ok)
		}
	}
	reps := []Repeat{{Metrics: map[string]float64{ForeignCPUPct: 80}}, {Metrics: map[string]float64{ForeignCPUPct: 100}}, {Metrics: map[string]float64{ForeignCPUPct: 90}}}
	if got := NotTrustedReason(reps); !strings.Contains(got, "median 90 % of a core") {
		t.Errorf("NotTrustedReason = %q", got)
	}
}
