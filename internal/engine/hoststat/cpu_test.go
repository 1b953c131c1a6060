package hoststat

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		file    string
		cpus    int
		wantErr string
	}{
		{"testdata/proc_stat_2cpu.txt", 2, ""},
		{"testdata/proc_stat_old_kernel.txt", 1, ""},
		{"testdata/proc_stat_bad.txt", 0, `field 2 "zero"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ps, err := ParseProcStat(f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ps.CPUs != tt.cpus {
				t.Errorf("CPUs = %d, want %d", ps.CPUs, tt.cpus)
			}
			if ps.Total() == 0 || ps.Busy() > ps.Total() {
				t.Errorf("implausible totals: busy %d total %d", ps.Busy(), ps.Total())
			}
		})
	}
	if _, err := ParseProcStat(strings.NewReader("intr 1 2 3\n")); err == nil {
		t.Error("a listing without a cpu line was accepted")
	}
	if _, err := ParseProcStat(strings.NewReader("cpu 1 2\n")); err == nil {
		t.Error("a cpu line with two counters was accepted")
	}
}

func TestHostCPUOver(t *testing.T) {
	// 2 CPUs, 1 s at 100 Hz: 200 ticks. 50 user + 30 system + 20 softirq
	// busy = 100 ticks = one core of two.
	d := ProcStat{User: 50, System: 30, SoftIRQ: 20, Idle: 100, CPUs: 2}
	h := HostCPUOver(d, time.Second)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("BusyPct", h.BusyPct, 100)
	near("UserPct", h.UserPct, 50)
	near("SysPct", h.SysPct, 30)
	near("SoftIRQPct", h.SoftIRQPct, 20)
	near("BusySeconds", h.BusySeconds, 1)
	if z := HostCPUOver(ProcStat{CPUs: 2}, time.Second); z.BusyPct != 0 {
		t.Errorf("empty delta gave %v", z.BusyPct)
	}
	// Counters that went backwards clamp at zero instead of wrapping.
	if s := (ProcStat{User: 1}).Sub(ProcStat{User: 5}); s.User != 0 {
		t.Errorf("backwards counter: %d", s.User)
	}
}

func TestReadProcCPU(t *testing.T) {
	a, err := ReadProcCPU()
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := 0; i < 30_000_000; i++ {
		x += i
	}
	b, err := ReadProcCPU()
	if err != nil {
		t.Fatal(err)
	}
	if b.User+b.Sys < a.User+a.Sys || b.MaxRSS <= 0 {
		t.Fatalf("rusage went backwards or no RSS: %+v → %+v (%d)", a, b, x)
	}
}
