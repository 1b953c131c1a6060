package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// procCPU is the process's user and system CPU time so far.
type procCPU struct {
	User, Sys time.Duration
	MaxRSS    int64 // bytes
}

func readProcCPU() procCPU {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return procCPU{}
	}
	return cpuFromRusage(&ru)
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
