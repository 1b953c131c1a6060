package proxies

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every
// Linux architecture (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// procStat is what the scenario reads of /proc/<pid>/stat.
type procStat struct {
	PPID int
	// Ticks is utime + stime: the process's CPU time (all its threads)
	// in USER_HZ ticks.
	Ticks uint64
}

// parseStat parses a /proc/<pid>/stat line: "pid (comm) state ppid … utime
// stime …". comm may hold spaces and parentheses, so the fields are
// counted from its last ')'.
func parseStat(line string) (procStat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 || !strings.Contains(line[:i], "(") {
		return procStat{}, errors.New("stat: no (comm)")
	}
	// After ')': state(3) ppid(4) pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime(14) stime(15).
	f := strings.Fields(line[i+1:])
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("stat: %d fields after (comm), want at least 13", len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("stat: ppid %q: %w", f[1], err)
	}
	ut, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat: utime %q: %w", f[11], err)
	}
	st, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat: stime %q: %w", f[12], err)
	}
	if ut+st < ut {
		return procStat{}, errors.New("stat: utime + stime overflows")
	}
	return procStat{PPID: ppid, Ticks: ut + st}, nil
}

// cpuMetrics turns each role's CPU ticks over a span into the cell's
// metrics: per role and summed, in seconds and in % of one core.
func cpuMetrics(ticks map[string]uint64, span float64) map[string]float64 {
	m := map[string]float64{}
	if span <= 0 || len(ticks) == 0 {
		return m
	}
	var total uint64
	for role, t := range ticks {
		s := float64(t) / userHZ
		m[RoleMetric(role, "cpu_seconds")] = s
		m[RoleMetric(role, "cpu_pct")] = 100 * s / span
		total += t
	}
	m[MetricCPUSeconds] = float64(total) / userHZ
	m[MetricCPUPct] = 100 * float64(total) / userHZ / span
	return m
}
