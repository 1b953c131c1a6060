package hoststat

import (
	"time"

	"github.com/cnibench/cnibench/internal/procfs"
)

// Other programs counted one by one (docs/interference.md). Where an end
// sees the host's processes (the host's pid namespace: the lab, a client
// run by hand), other programs' CPU is what each used between the edges of
// the window, /proc/<pid>/stat's utime+stime with the children it reaped,
// read at both edges (othersTicks says how processes that start and end
// in the window count). The run's processes (its cgroup) and the
// processes that started it (this process's ancestors but init: the
// suite, which reaps the run's processes, a shell) are left out, and so
// are kernel threads. Unlike the host's
// /proc/stat less the run's cgroup, this does not lose the softirq work
// the kernel charges to the run's tasks (about half a core in the quick
// profile's network-heavy cells): a hog is counted as what it used.

// Others is one edge's reading: each counted process's CPU so far, Read
// when it was read (else Err says why).
type Others struct {
	procs map[procKey]procCPU
	Read  bool
	Err   error
}

// procKey names a process across edges: a pid reused by another process
// has another start time.
type procKey struct {
	pid   int
	start uint64
}

// procCPU is one process's CPU so far (its own and its reaped
// children's, in ticks) and its parent.
type procCPU struct {
	ticks uint64
	ppid  int
}

// othersOf reads snap's processes other than the run's (runPIDs), self
// and self's ancestors but init (pid 1, which reaps the host's orphans:
// its reaped children are other programs'), and kernel threads.
func othersOf(snap procfs.Snapshot, self int, runPIDs map[int]bool) Others {
	anc := map[int]bool{self: true}
	for _, p := range snap.Ancestors(self) {
		if p != 1 {
			anc[p] = true
		}
	}
	procs := map[procKey]procCPU{}
	for pid, st := range snap {
		if st.KernelThread() || runPIDs[pid] || anc[pid] {
			continue
		}
		procs[procKey{pid, st.StartTime}] = procCPU{ticks: st.TicksWithReaped(), ppid: st.PPID}
	}
	return Others{procs: procs, Read: true}
}

// othersTicks is what the counted processes used between edges a and b,
// in ticks, process by process:
//   - one counted at both edges: what it used between them, its reaped
//     children's time included;
//   - one that started after a: all of it;
//   - one that ended after a and was reaped by a process counted at both
//     edges: its whole life is in the reaper's reaped time at b, so its
//     time before a is taken out;
//   - one that ended and was reaped by a process left out (the suite, the
//     `go` command that runs test binaries side by side, a run's process):
//     its time within the window is lost with it, and counted as none —
//     never as the negative of its life so far, which hid a one-core hog
//     behind a sibling test binary's exit (the difference of sums did).
func othersTicks(a, b Others) uint64 {
	var used, before uint64
	for k, pb := range b.procs {
		if pa, ok := a.procs[k]; !ok {
			used += pb.ticks
		} else if pb.ticks > pa.ticks {
			used += pb.ticks - pa.ticks
		}
	}
	var aByPID map[int]procKey
	for k, pa := range a.procs {
		if _, live := b.procs[k]; live {
			continue
		}
		if aByPID == nil {
			aByPID = make(map[int]procKey, len(a.procs))
			for k := range a.procs {
				aByPID[k.pid] = k
			}
		}
		if parent, ok := aByPID[pa.ppid]; ok {
			if _, counted := b.procs[parent]; counted {
				before += pa.ticks
			}
		}
	}
	if before >= used {
		return 0
	}
	return used - before
}

// OthersUsed is other programs' CPU between two edges; ok false when
// either edge failed.
func OthersUsed(a, b Others) (time.Duration, bool) {
	if !a.Read || !b.Read {
		return 0, false
	}
	return procfs.Duration(othersTicks(a, b)), true
}

// OthersOver is other programs' CPU between two edges in % of one core
// over wall, less lessOwn (the run's processes of another cgroup on the
// same host, which the count includes); ok false when either edge failed.
func OthersOver(a, b Others, wall, lessOwn time.Duration) (float64, bool) {
	used, ok := OthersUsed(a, b)
	if !ok || wall <= 0 {
		return 0, false
	}
	used -= lessOwn
	if used < 0 {
		used = 0
	}
	return 100 * used.Seconds() / wall.Seconds(), true
}
