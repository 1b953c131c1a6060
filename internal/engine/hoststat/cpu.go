package hoststat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStat is the aggregate "cpu" line of /proc/stat, in USER_HZ ticks.
type ProcStat struct {
	User    uint64 `json:"user"`
	Nice    uint64 `json:"nice"`
	System  uint64 `json:"system"`
	Idle    uint64 `json:"idle"`
	IOWait  uint64 `json:"iowait"`
	IRQ     uint64 `json:"irq"`
	SoftIRQ uint64 `json:"softirq"`
	Steal   uint64 `json:"steal"`
	// CPUs is the number of per-CPU lines (online CPUs the totals cover).
	CPUs int `json:"cpus"`
}

// Busy is every tick not spent idle or waiting for I/O (guest time is
// already included in user and nice).
func (p ProcStat) Busy() uint64 {
	return p.User + p.Nice + p.System + p.IRQ + p.SoftIRQ + p.Steal
}

// Total is every tick.
func (p ProcStat) Total() uint64 { return p.Busy() + p.Idle + p.IOWait }

// Sub returns p - q field by field (counters never go backwards; a
// wrapped or reset counter gives 0).
func (p ProcStat) Sub(q ProcStat) ProcStat {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return ProcStat{d(p.User, q.User), d(p.Nice, q.Nice), d(p.System, q.System), d(p.Idle, q.Idle),
		d(p.IOWait, q.IOWait), d(p.IRQ, q.IRQ), d(p.SoftIRQ, q.SoftIRQ), d(p.Steal, q.Steal), p.CPUs}
}

// ParseProcStat reads the aggregate cpu line from a /proc/stat listing.
func ParseProcStat(r io.Reader) (ProcStat, error) {
	sc := bufio.NewScanner(r)
	var ps ProcStat
	found := false
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 || !strings.HasPrefix(fs[0], "cpu") {
			continue
		}
		if fs[0] != "cpu" {
			if _, err := strconv.Atoi(fs[0][3:]); err == nil {
				ps.CPUs++
			}
			continue
		}
		if len(fs) < 5 {
			return ProcStat{}, fmt.Errorf("/proc/stat cpu line has %d counters, want at least 4", len(fs)-1)
		}
		var v [8]uint64
		for i := 0; i < 8 && i+1 < len(fs); i++ {
			n, err := strconv.ParseUint(fs[i+1], 10, 64)
			if err != nil {
				return ProcStat{}, fmt.Errorf("/proc/stat cpu field %d %q: %w", i+1, fs[i+1], err)
			}
			v[i] = n
		}
		ps.User, ps.Nice, ps.System, ps.Idle, ps.IOWait, ps.IRQ, ps.SoftIRQ, ps.Steal = v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		found = true
	}
	if err := sc.Err(); err != nil {
		return ProcStat{}, err
	}
	if !found {
		return ProcStat{}, fmt.Errorf("/proc/stat has no aggregate cpu line")
	}
	if ps.CPUs == 0 {
		ps.CPUs = 1
	}
	return ps, nil
}

// ReadProcStat reads /proc/stat.
func ReadProcStat() (ProcStat, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return ProcStat{}, err
	}
	defer f.Close()
	return ParseProcStat(f)
}

// HostCPU is host-wide CPU use over a window in percent of one core
// (100 = one core busy for the whole window).
type HostCPU struct {
	BusyPct, UserPct, SysPct, SoftIRQPct, IRQPct float64
	// BusySeconds is the busy CPU time of all cores in the window.
	BusySeconds float64
}

// HostCPUOver converts a /proc/stat delta into percentages of one core.
// The shares come from the tick counts alone (busy ticks ÷ all ticks ×
// CPUs), so USER_HZ need not be known.
func HostCPUOver(d ProcStat, wall time.Duration) HostCPU {
	cores := d.CPUs
	total := float64(d.Total())
	if total == 0 || cores <= 0 || wall <= 0 {
		return HostCPU{}
	}
	// Every core accrues wall/tick ticks; so a tick is cores·wall/total.
	coreSeconds := float64(cores) * wall.Seconds()
	pct := func(ticks uint64) float64 { return 100 * float64(cores) * float64(ticks) / total }
	return HostCPU{
		BusyPct:     pct(d.Busy()),
		UserPct:     pct(d.User + d.Nice),
		SysPct:      pct(d.System),
		SoftIRQPct:  pct(d.SoftIRQ),
		IRQPct:      pct(d.IRQ),
		BusySeconds: coreSeconds * float64(d.Busy()) / total,
	}
}

// ProcCPU is the process's user and system CPU time so far.
type ProcCPU struct {
	User, Sys time.Duration
	MaxRSS    int64 // bytes
}
