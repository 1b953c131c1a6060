// Package procfs parses the /proc files cnibench reads of processes and of
// the machine: a process's stat line (its parent, CPU times and start time),
// the "Key: N kB" lines of /proc/<pid>/status and /proc/meminfo, and a
// snapshot of every process's stat for the CPU of a process tree. The
// parsers are pure and fuzzed; what reads /proc is Linux-only.
package procfs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// UserHZ is the unit of a stat line's times (USER_HZ: 100 on every Linux
// architecture Go supports).
const UserHZ = 100

// Stat is what cnibench reads of a /proc/<pid>/stat line. Times are in
// USER_HZ ticks.
type Stat struct {
	PID   int
	Comm  string
	State byte
	PPID  int
	// Flags is the kernel's PF_* flags (PF_KTHREAD marks a kernel thread).
	Flags uint64
	// UTime and STime are the process's own user and system time (all its
	// threads); CUTime and CSTime those of the children it has reaped.
	UTime, STime, CUTime, CSTime uint64
	// StartTime is when the process started, in ticks since boot.
	StartTime uint64
}

// pfKThread is PF_KTHREAD (include/linux/sched.h).
const pfKThread = 0x00200000

// KernelThread reports whether the process is a kernel thread.
func (s Stat) KernelThread() bool { return s.Flags&pfKThread != 0 }

// Ticks is the process's own CPU time, UTime + STime, in ticks.
func (s Stat) Ticks() uint64 { return s.UTime + s.STime }

// TicksWithReaped is Ticks plus the CPU time of the children it reaped
// (a child that ended is counted in its parent).
func (s Stat) TicksWithReaped() uint64 { return s.UTime + s.STime + s.CUTime + s.CSTime }

// maxTicks bounds each time field, so that the sums above cannot overflow
// and Duration(ticks) stays positive: 2^61 ticks are 730 million years.
const maxTicks = 1 << 61

// Duration converts ticks to a duration (saturating at the largest one).
func Duration(ticks uint64) time.Duration {
	const per = uint64(time.Second / UserHZ)
	if ticks > math.MaxInt64/per {
		return math.MaxInt64
	}
	return time.Duration(ticks * per)
}

// ParseStat parses a /proc/<pid>/stat line: "pid (comm) state ppid pgrp
// session tty_nr tpgid flags … utime stime cutime cstime … starttime …".
// comm may hold spaces and parentheses, so the fields are counted from its
// last ')'.
func ParseStat(line string) (Stat, error) {
	line = strings.TrimSpace(line)
	open := strings.IndexByte(line, '(')
	end := strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, errors.New("proc stat: no (comm)")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil || pid < 0 {
		return Stat{}, fmt.Errorf("proc stat: pid %q: not a process id", strings.TrimSpace(line[:open]))
	}
	// f[0] is field 3 (state); field n is f[n-3].
	f := strings.Fields(line[end+1:])
	const last = 22 - 3 // starttime
	if len(f) <= last {
		return Stat{}, fmt.Errorf("proc stat: %d fields after (comm), want at least %d", len(f), last+1)
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("proc stat: state %q: not one letter", f[0])
	}
	st := Stat{PID: pid, Comm: line[open+1 : end], State: f[0][0]}
	if st.PPID, err = strconv.Atoi(f[4-3]); err != nil || st.PPID < 0 {
		return Stat{}, fmt.Errorf("proc stat: ppid %q: not a process id", f[4-3])
	}
	for _, v := range []struct {
		name  string
		field int
		dst   *uint64
		ticks bool
	}{
		{"flags", 9, &st.Flags, false},
		{"utime", 14, &st.UTime, true},
		{"stime", 15, &st.STime, true},
		{"cutime", 16, &st.CUTime, true},
		{"cstime", 17, &st.CSTime, true},
		{"starttime", 22, &st.StartTime, true},
	} {
		n, err := strconv.ParseUint(f[v.field-3], 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("proc stat: %s %q: not a number", v.name, f[v.field-3])
		}
		if v.ticks && n > maxTicks {
			return Stat{}, fmt.Errorf("proc stat: %s %d: out of range", v.name, n)
		}
		*v.dst = n
	}
	return st, nil
}
