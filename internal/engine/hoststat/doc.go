// Package hoststat reads what one end of the workload engine sees of its
// host at a measured window's edges, and turns two readings into figures:
// the host's CPU from /proc/stat (cpu.go: ProcStat, HostCPUOver), this
// process's own CPU (rusage_*.go) and its cgroup's (CgroupOver), other
// programs' CPU counted process by process (others*.go) or by difference
// (ForeignOver, the idle probe ProbeForeign; docs/interference.md), and the
// network namespace's IP fragmentation counters and the boot id
// (ipfrag.go). It knows nothing of tests or sessions.
package hoststat

import "github.com/cnibench/cnibench/internal"

// ErrNotSupported is wrapped by the error of a reading this OS lacks (the
// `_other.go` files): elsewhere than on Linux the figure is not measured.
var ErrNotSupported = internal.ErrNotSupported
