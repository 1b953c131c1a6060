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
	// One process (pid 40, started at tick 7) with ticks so far.
	read := func(ticks uint64) Others {
		return Others{procs: map[procKey]procCPU{{40, 7}: {ticks: ticks, ppid: 1}}, Read: true}
	}
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

// Processes that start, end and reuse pids between the edges, counted
// process by process.
func TestOthersTicks(t *testing.T) {
	const self = 30
	run := map[int]bool{30: true, 31: true}
	base := procfs.Snapshot{
		1:  {PID: 1, UTime: 100, CUTime: 40, StartTime: 1},                 // init
		10: {PID: 10, PPID: 1, UTime: 3, StartTime: 2},                     // a shell: left out
		20: {PID: 20, PPID: 10, UTime: 50, StartTime: 3},                   // `go test`: left out
		30: {PID: 30, PPID: 20, UTime: 200, StartTime: 4},                  // this client (self)
		31: {PID: 31, PPID: 30, UTime: 400, StartTime: 5},                  // a server of the run
		40: {PID: 40, PPID: 1, UTime: 1000, StartTime: 6},                  // a hog
		50: {PID: 50, PPID: 20, UTime: 9000, StartTime: 7},                 // a sibling test binary
		60: {PID: 60, PPID: 1, UTime: 10, StartTime: 8},                    // a build
		61: {PID: 61, PPID: 60, UTime: 700, StartTime: 9},                  // its compiler
		70: {PID: 70, PPID: 1, UTime: 5, StartTime: 10},                    // a daemon
		2:  {PID: 2, Flags: 0x00200000, STime: 5000, StartTime: 0},         // kthreadd
		71: {PID: 71, PPID: 70, UTime: 30, CSTime: 2, StartTime: 11},       // the daemon's worker
		80: {PID: 80, PPID: 4242, UTime: 20, StartTime: 12},                // parent unknown
		90: {PID: 90, PPID: 1, Flags: 0x00200000, UTime: 1, StartTime: 13}, // a kernel thread
	}
	edit := func(f func(s procfs.Snapshot)) procfs.Snapshot {
		s := procfs.Snapshot{}
		for k, v := range base {
			s[k] = v
		}
		f(s)
		return s
	}
	set := func(s procfs.Snapshot, pid int, f func(st *procfs.Stat)) {
		st := s[pid]
		f(&st)
		s[pid] = st
	}
	for _, tc := range []struct {
		name string
		b    procfs.Snapshot
		want uint64
	}{
		{"nothing moved", base, 0},
		{"the hog used 100 ticks", edit(func(s procfs.Snapshot) { set(s, 40, func(st *procfs.Stat) { st.UTime += 100 }) }), 100},
		{"the run's and the ancestors' CPU left out", edit(func(s procfs.Snapshot) {
			set(s, 30, func(st *procfs.Stat) { st.UTime += 500 })
			set(s, 31, func(st *procfs.Stat) { st.STime += 500 })
			set(s, 20, func(st *procfs.Stat) { st.CUTime += 500 })
			set(s, 2, func(st *procfs.Stat) { st.STime += 500 })
		}), 0},
		{"a sibling test binary reaped by `go test` beside the hog: the hog's 100, not 100 less the sibling's life", edit(func(s procfs.Snapshot) {
			set(s, 40, func(st *procfs.Stat) { st.UTime += 100 })
			delete(s, 50)
			set(s, 20, func(st *procfs.Stat) { st.CUTime += 9050 })
		}), 100},
		{"a compiler reaped by its counted build: what it used in the window", edit(func(s procfs.Snapshot) {
			delete(s, 61)
			set(s, 60, func(st *procfs.Stat) { st.CUTime += 700 + 25; st.UTime++ })
		}), 26},
		{"a process that started: all of it", edit(func(s procfs.Snapshot) {
			s[62] = procfs.Stat{PID: 62, PPID: 60, UTime: 40, StartTime: 500}
		}), 40},
		{"a pid reused by another process: the new one whole, the old one reaped by the daemon", edit(func(s procfs.Snapshot) {
			s[71] = procfs.Stat{PID: 71, PPID: 70, UTime: 3, StartTime: 600}
			set(s, 70, func(st *procfs.Stat) { st.CUTime += 32 + 4 })
		}), 3 + 4},
		{"an orphan of an unknown parent that ended: none of it, never less", edit(func(s procfs.Snapshot) { delete(s, 80) }), 0},
	} {
		a := othersOf(base, self, run)
		b := othersOf(tc.b, self, run)
		if got := othersTicks(a, b); got != tc.want {
			t.Errorf("%s: othersTicks = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := len(othersOf(base, self, run).procs); got != 8 {
		t.Errorf("othersOf counted %d processes, want 8 (init, the hog, the sibling, the build, its compiler, the daemon, its worker, the orphan; not the shell, `go test`, the run or kernel threads)", got)
	}
}
