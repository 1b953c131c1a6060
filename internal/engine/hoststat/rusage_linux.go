package hoststat

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ReadProcCPU reads the process's CPU time; an error means it is not
// measured (never zero).
func ReadProcCPU() (ProcCPU, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return ProcCPU{}, fmt.Errorf("getrusage: %w", err)
	}
	return cpuFromRusage(&ru), nil
}

// cpuFromRusage converts getrusage's fields (timevals, max RSS in KiB on
// Linux) into durations and bytes.
func cpuFromRusage(ru *unix.Rusage) ProcCPU {
	return ProcCPU{
		User:   time.Duration(ru.Utime.Nano()),
		Sys:    time.Duration(ru.Stime.Nano()),
		MaxRSS: ru.Maxrss * 1024,
	}
}

// ReadSelfAndChildrenCPU is the CPU time of this process and of its
// children it has waited for.
func ReadSelfAndChildrenCPU() (time.Duration, error) {
	var self, kids unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &self); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &kids); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano()), nil
}
