package hoststat

import (
	"time"

	"github.com/cnibench/cnibench/internal/procfs"
)

// Other programs counted one by one (docs/interference.md). Where an end
// sees the host's processes (the host's pid namespace: the lab, a client
// run by hand), other programs' CPU is the sum of their own CPU times,
// /proc/<pid>/stat's utime+stime with the children each reaped, taken at
// both edges of the window. The run's processes (its cgroup) and the
// processes that started it (this process's ancestors but init: the
// suite, which reaps the run's processes, a shell) are left out, and so
// are kernel threads. Unlike the host's
// /proc/stat less the run's cgroup, this does not lose the softirq work
// the kernel charges to the run's tasks (about half a core in the quick
// profile's network-heavy cells): a hog is counted as what it used.

// Others is one edge's sum, Read when it was read (else Err says
// why).
type Others struct {
	Ticks uint64
	Read  bool
	Err   error
}

// othersSum sums snap's processes other than the run's (runPIDs), self
// and self's ancestors but init (pid 1, which reaps the host's orphans:
// its reaped children are other programs').
func othersSum(snap procfs.Snapshot, self int, runPIDs map[int]bool) uint64 {
	anc := map[int]bool{self: true}
	for _, p := range snap.Ancestors(self) {
		if p != 1 {
			anc[p] = true
		}
	}
	return snap.SumTicks(func(pid int) bool { return runPIDs[pid] || anc[pid] })
}

// OthersOver is other programs' CPU between two edges in % of one core
// over wall, less lessOwn (the run's processes of another cgroup on the
// same host, which the sum counted); ok false when either edge failed.
func OthersOver(a, b Others, wall, lessOwn time.Duration) (float64, bool) {
	if !a.Read || !b.Read || wall <= 0 {
		return 0, false
	}
	var used time.Duration
	if b.Ticks > a.Ticks { // a foreign process reaped by a left-out one can lower the sum
		used = procfs.Duration(b.Ticks - a.Ticks)
	}
	used -= lessOwn
	if used < 0 {
		used = 0
	}
	return 100 * used.Seconds() / wall.Seconds(), true
}
