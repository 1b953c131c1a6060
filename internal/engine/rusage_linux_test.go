package engine

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCPUFromRusage(t *testing.T) {
	tests := []struct {
		ru   unix.Rusage
		want procCPU
	}{
		{unix.Rusage{}, procCPU{}},
		{unix.Rusage{Utime: unix.Timeval{Sec: 1, Usec: 500000}, Stime: unix.Timeval{Usec: 250}, Maxrss: 2048},
			procCPU{User: 1500 * time.Millisecond, Sys: 250 * time.Microsecond, MaxRSS: 2 << 20}},
		{unix.Rusage{Utime: unix.Timeval{Sec: 86400}, Maxrss: 1},
			procCPU{User: 24 * time.Hour, MaxRSS: 1024}},
	}
	for _, tt := range tests {
		if got := cpuFromRusage(&tt.ru); got != tt.want {
			t.Errorf("cpuFromRusage(%+v) = %+v, want %+v", tt.ru, got, tt.want)
		}
	}
}
