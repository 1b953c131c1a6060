package hoststat

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCPUFromRusage(t *testing.T) {
	tests := []struct {
		ru   unix.Rusage
		want ProcCPU
	}{
		{unix.Rusage{}, ProcCPU{}},
		{unix.Rusage{Utime: unix.Timeval{Sec: 1, Usec: 500000}, Stime: unix.Timeval{Usec: 250}, Maxrss: 2048},
			ProcCPU{User: 1500 * time.Millisecond, Sys: 250 * time.Microsecond, MaxRSS: 2 << 20}},
		{unix.Rusage{Utime: unix.Timeval{Sec: 86400}, Maxrss: 1},
			ProcCPU{User: 24 * time.Hour, MaxRSS: 1024}},
	}
	for _, tt := range tests {
		if got := cpuFromRusage(&tt.ru); got != tt.want {
			t.Errorf("cpuFromRusage(%+v) = %+v, want %+v", tt.ru, got, tt.want)
		}
	}
}
