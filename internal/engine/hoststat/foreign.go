package hoststat

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/hostinfo"
)

// Interference: what the rest of a host used of its CPUs in a measured
// window, beside the run's own work (docs/interference.md).
//
// Where an end sees the host's processes, other programs' CPU is counted
// process by process (others.go). Where it does not (a pod in its own pid
// namespace), a host's process CPU in a window is its /proc/stat
// user+nice+system; the run's own is the CPU time of the cgroup each end
// runs in (in the lab, every process of the run — clients, servers,
// daemons — shares the spawner's cgroup; on a cluster, each end's
// container). What is left is other programs': foreign_cpu_pct. Steal (a hypervisor running other
// guests on this one's CPUs) is steal_pct. Softirq and hard-irq time — the
// datapath's packet work — is neither: it is left out of the host side.
//
// Without CONFIG_IRQ_TIME_ACCOUNTING, softirq work done on one of the
// run's tasks counts in the run's cgroup and in /proc/stat's softirq, so
// that second figure is an under-estimate, never an over-estimate from the
// run's own packet work: by about half a core in network-heavy cells
// (docs/interference.md). Kernel threads and the suite's own orchestrating
// process count as foreign in it, not in the process count.

// ownCgroup is this process's cgroup v2 directory, found once.
var ownCgroup = sync.OnceValues(hostinfo.CgroupDir)

// ReadOwnCgroup reads this process's cgroup's CPU so far.
func ReadOwnCgroup() (hostinfo.CgroupCPU, error) {
	dir, err := ownCgroup()
	if err != nil {
		return hostinfo.CgroupCPU{}, err
	}
	return hostinfo.ReadCgroupCPU(dir)
}

// CgroupStat is one end's cgroup CPU over its window, sent by the server.
type CgroupStat struct {
	// ID is the kernel's cgroup id: the same ID on the same host (boot id)
	// is the same cgroup, counted once.
	ID          uint64 `json:"id"`
	UsageMicros int64  `json:"usage_us"`
}

// CgroupOver is the cgroup's CPU between two reads, or nil when either
// failed or they are of different cgroups.
func CgroupOver(a, b hostinfo.CgroupCPU, errA, errB error) *CgroupStat {
	if errA != nil || errB != nil || a.ID != b.ID || b.Usage < a.Usage {
		return nil
	}
	return &CgroupStat{ID: b.ID, UsageMicros: (b.Usage - a.Usage).Microseconds()}
}

// ForeignOver returns other programs' CPU and steal on a host over a
// window, in percent of one core, from the host's /proc/stat delta d and
// the run's own CPU time on that host in the same window.
func ForeignOver(d ProcStat, wall, own time.Duration) (foreignPct, stealPct float64, ok bool) {
	total := float64(d.Total())
	if total == 0 || d.CPUs <= 0 || wall <= 0 {
		return 0, 0, false
	}
	// A tick is CPUs·wall/total seconds (every core accrues ticks).
	tick := float64(d.CPUs) * wall.Seconds() / total
	procs := float64(d.User+d.Nice+d.System) * tick
	foreign := procs - own.Seconds()
	if foreign < 0 {
		foreign = 0
	}
	return 100 * foreign / wall.Seconds(), 100 * float64(d.Steal) * tick / wall.Seconds(), true
}

// ProbeForeign watches this host for d: other programs' CPU and steal in
// percent of one core, this process's own CPU (and its children's, and
// its ancestors') left out. The suite's idle probe before a run.
func ProbeForeign(ctx context.Context, d time.Duration) (foreignPct, stealPct float64, err error) {
	read := func() (ProcStat, time.Duration, Others, error) {
		h, err := ReadProcStat()
		if err != nil {
			return ProcStat{}, 0, Others{}, err
		}
		c, err := ReadSelfAndChildrenCPU()
		return h, c, readOthersBesideSelf(), err
	}
	h0, c0, o0, err := read()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	h1, c1, o1, err := read()
	if err != nil {
		return 0, 0, err
	}
	wall := time.Since(t0)
	f, st, ok := ForeignOver(h1.Sub(h0), wall, c1-c0)
	if !ok {
		return 0, 0, errors.New("/proc/stat did not move during the probe")
	}
	if p, ok := OthersOver(o0, o1, wall, 0); ok {
		// Other processes' ticks are read one /proc/PID/stat after
		// another, each rounded to a tick: on a loaded host over a short
		// probe their sum can pass what the cores could give (260 % of
		// 2 cores seen over 200 ms); no more than every core is foreign.
		f = min(p, 100*float64(h1.CPUs))
	}
	return f, st, nil
}
