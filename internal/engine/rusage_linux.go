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
	return procCPU{
		User:   time.Duration(ru.Utime.Nano()),
		Sys:    time.Duration(ru.Stime.Nano()),
		MaxRSS: ru.Maxrss * 1024,
	}
}
