package hoststat

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/procfs"
)

// near compares floats to a relative 1e-9.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

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
		f, st, ok := ForeignOver(tt.d, 10*time.Second, tt.own)
		if ok != tt.ok || !near(f, tt.foreign) || !near(st, tt.stel) {
			t.Errorf("%s: ForeignOver = %v, %v, %v; want %v, %v, %v", tt.name, f, st, ok, tt.foreign, tt.stel, tt.ok)
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

func TestOthersOver(t *testing.T) {
	read := func(ticks uint64) Others { return Others{Ticks: ticks, Read: true} }
	for _, tc := range []struct {
		name    string
		a, b    Others
		lessOwn time.Duration
		want    float64
		ok      bool
	}{
		// 10 s windows; a tick is 10 ms.
		{"a hog of half a core", read(1000), read(1500), 0, 50, true},
		{"idle", read(7), read(7), 0, 0, true},
		{"the server on this host in another cgroup taken out", read(0), read(300), 2 * time.Second, 10, true},
		{"a foreign child reaped by a left-out process lowers the sum: 0, not negative", read(500), read(400), 0, 0, true},
		{"less own than counted: 0", read(0), read(100), 5 * time.Second, 0, true},
		{"an edge not read", read(0), Others{Err: errOwnPIDNamespace}, 0, 0, false},
		{"zero value is not a reading", Others{}, read(5), 0, 0, false},
	} {
		got, ok := OthersOver(tc.a, tc.b, 10*time.Second, tc.lessOwn)
		if ok != tc.ok || !near(got, tc.want) {
			t.Errorf("%s: OthersOver = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestOthersSum(t *testing.T) {
	snap := procfs.Snapshot{
		1:  {PID: 1, UTime: 100, CUTime: 40},             // init, with reaped orphans
		2:  {PID: 2, Flags: 0x00200000, STime: 5000},     // kthreadd: never counted
		10: {PID: 10, PPID: 1, UTime: 3},                 // the shell that started the suite
		20: {PID: 20, PPID: 10, UTime: 50, CUTime: 900},  // the suite: an ancestor
		30: {PID: 30, PPID: 20, UTime: 200, STime: 100},  // this client (self)
		31: {PID: 31, PPID: 20, UTime: 400},              // a server of the run
		40: {PID: 40, PPID: 1, UTime: 1000, CSTime: 500}, // a build: counted
		41: {PID: 41, PPID: 40, UTime: 250},              // its compiler: counted
	}
	got := othersSum(snap, 30, map[int]bool{30: true, 31: true})
	if want := uint64(100 + 40 + 1000 + 500 + 250); got != want {
		t.Errorf("othersSum = %d, want %d (init, the build and its compiler)", got, want)
	}
}
