package procfs

import (
	"errors"
	"math"
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
