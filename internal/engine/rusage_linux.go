package engine

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// readProcCPU reads the process's CPU time; an error means it is not
// measured (never zero).
func readProcCPU() (procCPU, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return procCPU{}, fmt.Errorf("getrusage: %w", err)
	}
	return cpuFromRusage(&ru), nil
}

// cpuFromRusage converts getrusage's fields (timevals, max RSS in KiB on
// Linux) into durations and bytes.
func cpuFromRusage(ru *unix.Rusage) procCPU {
	return procCPU{
		User:   time.Duration(ru.Utime.Nano()),
		Sys:    time.Duration(ru.Stime.Nano()),
		MaxRSS: ru.Maxrss * 1024,
	}
}
