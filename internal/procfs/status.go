package procfs

import (
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
)

// StatusBytes reads a "Key:   123 kB" line of a /proc status-like file
// (/proc/<pid>/status, /proc/meminfo), in bytes; key includes the colon.
// ok is false when the line is missing or not a byte count.
func StatusBytes(text, key string) (n int64, ok bool) {
	for line := range strings.Lines(text) {
		v, found := strings.CutPrefix(line, key)
		if !found {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// MemAvailable reads MemAvailable from /proc/meminfo's text, in bytes.
func MemAvailable(meminfo string) (int64, error) {
	v, ok := StatusBytes(meminfo, "MemAvailable:")
	if !ok {
		return 0, errors.New("no MemAvailable byte count in /proc/meminfo")
	}
	return v, nil
}

// ResetPeakRSS resets this process's peak RSS (VmHWM) to its current RSS
// (/proc/self/clear_refs "5") and returns that RSS; ok is false if either
// step failed (not Linux, or a kernel without clear_refs): then no peak
// RSS is to be reported for what follows.
func ResetPeakRSS() (rss int64, ok bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return SelfStatusBytes("VmRSS:")
}

// SelfStatusBytes reads a "kB" field of /proc/self/status in bytes
// ("VmHWM:", "VmRSS:").
func SelfStatusBytes(key string) (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return StatusBytes(string(b), key)
}
