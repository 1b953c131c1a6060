package l4lb

import (
	"fmt"
	"strconv"
	"strings"
)

// parseCPUList parses a kernel CPU list ("0", "0-3", "0,2-3", as
// /proc/PID/status's Cpus_allowed_list) into its CPUs, in order.
func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("cpu list %q: empty", s)
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: %q is not a CPU", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 4096 {
				return nil, fmt.Errorf("cpu list %q: %q is not a range", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// cpusAllowed returns the Cpus_allowed_list of a /proc/PID/status text.
func cpusAllowed(status string) ([]int, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return parseCPUList(v)
		}
	}
	return nil, fmt.Errorf("proc status: no Cpus_allowed_list")
}
