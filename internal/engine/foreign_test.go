package engine

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestForeignOver(t *testing.T) {
	// 2 cores, 10 s: 2000 ticks of 10 ms.
	tests := []struct {
		name          string
		d             ProcStat
		own           time.Duration
		foreign, stel float64
		ok            bool
	}{
		{"all the run's", ProcStat{User: 500, System: 500, Idle: 1000, CPUs: 2}, 10 * time.Second, 0, 0, true},
		{"a hog of one core", ProcStat{User: 1500, System: 100, Idle: 400, CPUs: 2}, 6 * time.Second, 100, 0, true},
		{"softirq and irq are not processes'", ProcStat{User: 100, SoftIRQ: 600, IRQ: 100, Idle: 1200, CPUs: 2}, time.Second, 0, 0, true},
		{"steal apart", ProcStat{User: 100, Steal: 300, Idle: 1600, CPUs: 2}, time.Second, 0, 30, true},
		{"own above the host's (tick rounding) is not negative", ProcStat{User: 100, Idle: 1900, CPUs: 2}, 2 * time.Second, 0, 0, true},
		{"no ticks", ProcStat{CPUs: 2}, 0, 0, 0, false},
	}
	for _, tt := range tests {
		f, st, ok := foreignOver(tt.d, 10*time.Second, tt.own)
		if ok != tt.ok || !near(f, tt.foreign) || !near(st, tt.stel) {
			t.Errorf("%s: foreignOver = %v, %v, %v; want %v, %v, %v", tt.name, f, st, ok, tt.foreign, tt.stel, tt.ok)
		}
	}
}

// The probe leaves this process's own CPU out and ends with its context.
func TestProbeForeign(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/stat")
	}
	f, st, err := ProbeForeign(context.Background(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	cores := float64(runtime.NumCPU())
	if f < 0 || f > 100*cores || st < 0 || st > 100*cores {
		t.Errorf("ProbeForeign = %v, %v: outside [0, %v]", f, st, 100*cores)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	if _, _, err := ProbeForeign(ctx, time.Minute); err == nil || time.Since(t0) > time.Second {
		t.Errorf("a cancelled probe returned %v after %s", err, time.Since(t0))
	}
}
